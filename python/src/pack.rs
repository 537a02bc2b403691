//! The `pack*` loader options as the crate's `Packing`.

use lodtensor::loader::{Overlong, PackMode, Packing};
use pyo3::prelude::*;

use crate::loader_options::{Options, option_error};

impl Options {
    /// The `pack*` options as the crate's [`Packing`] (`None` without `pack`).
    pub(crate) fn packing(&self) -> PyResult<Option<Packing>> {
        let Some(seq_len) = self.pack.as_ref().map(|p| p.first()) else {
            return Ok(None);
        };
        let overlong = match self.pack_overlong.as_str() {
            "cut" => Overlong::Cut,
            "drop" => Overlong::Drop,
            other => {
                let reason = format!("must be \"cut\" or \"drop\", got {other:?}");
                return Err(option_error("pack_overlong", &reason));
            }
        };
        let mode = match self.pack_split {
            true => PackMode::Split {
                pad_last: self.pack_pad_last,
            },
            false => PackMode::BestFit {
                lookahead: self.pack_lookahead,
                overlong,
            },
        };
        let packing = Packing::new(seq_len)
            .with_extra_token(self.pack_extra_token)
            .with_mode(mode);
        Ok(Some(packing))
    }
}
