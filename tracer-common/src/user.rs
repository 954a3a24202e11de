//! The map values user space writes, as aya `Pod` types: tracer passes
//! these types to maps as they are (the orphan rule allows the impls only
//! here, in the crate that defines the types).
//!
//! SAFETY (every impl): `#[repr(C)]` structs of integers without padding,
//! their sizes asserted where they are defined; any bit pattern is a value.

use crate::event::UvmCapture;
use crate::params::Layout;
use crate::stack::PyLayout;

unsafe impl aya::Pod for UvmCapture {}
unsafe impl aya::Pod for Layout {}
unsafe impl aya::Pod for PyLayout {}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Pod` needs no padding: the fields add up to the size.
    #[test]
    fn no_padding() {
        assert_eq!(core::mem::size_of::<UvmCapture>(), 4 * 4);
        assert_eq!(core::mem::size_of::<Layout>(), 3 * 4 + 4 * crate::params::MAX_PARAMS);
        fn is_pod<T: aya::Pod>() {}
        is_pod::<UvmCapture>();
        is_pod::<Layout>();
        is_pod::<PyLayout>();
    }
}
