//! `--names`: how the commands that print kernel names spell them
//! (analysis/kernel_names.rs).
use clap::Args;

/// How kernel names are printed (analysis/kernel_names.rs).
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Names {
    /// Base name, template arguments elided: vectorized_elementwise_kernel<…>
    #[default]
    Short,
    /// The whole demangled C++ name
    Full,
    /// As recorded (C++ names mangled)
    Mangled,
}

/// `--names` (and the older `--mangled`), shared by the commands that print kernel names.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct NamesOpt {
    /// How to print kernel names: short (like Nsight's base names), full (demangled) or mangled.
    #[arg(long, value_enum, value_name = "STYLE", default_value_t = Names::Short)]
    pub names: Names,
    /// Same as --names mangled.
    #[arg(long, hide = true)]
    pub mangled: bool,
}

impl NamesOpt {
    pub fn style(&self) -> crate::analysis::kernel_names::NameStyle {
        use crate::analysis::kernel_names::NameStyle;
        if self.mangled {
            return NameStyle::Mangled;
        }
        match self.names {
            Names::Short => NameStyle::Short,
            Names::Full => NameStyle::Full,
            Names::Mangled => NameStyle::Mangled,
        }
    }
}
