//! `#[guard]`: put on a `#[pymethods]` impl block or a `#[pyfunction]`, it runs the body of
//! every function through `crate::error::guard` (or `guard_value` for a function that
//! cannot fail otherwise, whose return type becomes `PyResult<T>`), so a Rust panic reaches
//! Python as `lodtensor.InternalError`, never as pyo3's `PanicException` (a
//! `BaseException` that `except Exception` misses). Written above `#[pymethods]` /
//! `#[pyfunction]`, so pyo3 sees the guarded functions.
//!
//! ```text
//! #[guard]
//! #[pymethods]
//! impl Dataset {
//!     fn __len__(&self) -> usize { self.rows }
//!     // becomes: fn __len__(&self) -> PyResult<usize> { crate::error::guard_value(move || { self.rows }) }
//! }
//! ```

use proc_macro::TokenStream;
use quote::quote;
use syn::{Block, ImplItem, Item, ReturnType, Signature, Type, parse_macro_input, parse_quote};

/// Guards every function of the impl block, or the function, it is put on.
#[proc_macro_attribute]
pub fn guard(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return syn::Error::new_spanned(attr, "#[guard] takes no arguments")
            .to_compile_error()
            .into();
    }
    match parse_macro_input!(item as Item) {
        Item::Impl(mut block) => {
            for item in &mut block.items {
                if let ImplItem::Fn(f) = item {
                    wrap(&mut f.sig, &mut f.block);
                }
            }
            quote!(#block).into()
        }
        Item::Fn(mut f) => {
            wrap(&mut f.sig, &mut f.block);
            quote!(#f).into()
        }
        other => syn::Error::new_spanned(other, "#[guard] goes on an impl block or a function")
            .to_compile_error()
            .into(),
    }
}

/// Runs `block` in a guard, making the return type a `PyResult` when it is not a result.
fn wrap(sig: &mut Signature, block: &mut Block) {
    let body = block.clone();
    let guarded: Block = match &sig.output {
        ReturnType::Type(_, ty) if is_result(ty) => {
            parse_quote!({ crate::error::guard(move || #body) })
        }
        ReturnType::Type(_, ty) => {
            let ty = ty.clone();
            sig.output = parse_quote!(-> ::pyo3::PyResult<#ty>);
            parse_quote!({ crate::error::guard_value(move || #body) })
        }
        ReturnType::Default => {
            sig.output = parse_quote!(-> ::pyo3::PyResult<()>);
            parse_quote!({ crate::error::guard_value(move || #body) })
        }
    };
    *block = guarded;
}

/// Whether `ty` is spelled as a result (`PyResult<T>`, `Result<T, E>`).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == "PyResult" || last.ident == "Result"),
        _ => false,
    }
}
