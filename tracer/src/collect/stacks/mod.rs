//! Stacks of the traced threads (docs/stacks.md): which calls take one and
//! what the kernel side is told (`sites.rs`), the Python interpreter
//! layouts its frame walker follows (`python_layout.rs`) and their upkeep
//! in the kernel's map while the processes run (`python_procs.rs`).
pub mod python_layout;
pub mod python_procs;
pub mod sites;
