//! [`Packing`]: how documents go into windows, its mode a [`PackMode`].

/// What to do with a document longer than a window when packing without splitting.
///
/// # Example
/// ```
/// use lodtensor::loader::{Overlong, PackMode, Packing};
/// let mode = PackMode::BestFit { lookahead: 1024, overlong: Overlong::Drop };
/// let packing = Packing::new(2048).with_mode(mode);
/// assert_eq!(packing.mode(), mode);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlong {
    /// Cut it into pieces of a window's length (the last one shorter), each packed as a
    /// document of its own.
    Cut,
    /// Leave it out, counted in [`Windows::dropped_tokens`](crate::loader::Windows::dropped_tokens).
    Drop,
}

/// The two ways of packing, each with the settings only it has.
///
/// # Example
/// ```
/// use lodtensor::loader::{Overlong, PackMode, Packing};
/// assert_eq!(Packing::new(4).mode(), PackMode::Split { pad_last: false });
/// let best_fit = PackMode::best_fit(64);
/// assert_eq!(best_fit, PackMode::BestFit { lookahead: 64, overlong: Overlong::Cut });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackMode {
    /// Concatenate and split: the documents one stream of tokens, cut into windows.
    Split {
        /// The epoch's last partial window padded with zeros, not dropped.
        pad_last: bool,
    },
    /// Whole documents by best-fit decreasing, `lookahead` documents of the epoch's order
    /// at a time (each into the fullest window it fits, longest first).
    BestFit {
        /// Documents considered together (at least 1).
        lookahead: usize,
        /// What to do with a document longer than a window.
        overlong: Overlong,
    },
}

impl PackMode {
    /// Best fit within `lookahead` documents, an overlong document cut.
    ///
    /// ```
    /// use lodtensor::loader::PackMode;
    /// assert!(matches!(PackMode::best_fit(8), PackMode::BestFit { lookahead: 8, .. }));
    /// ```
    pub fn best_fit(lookahead: usize) -> Self {
        PackMode::BestFit {
            lookahead,
            overlong: Overlong::Cut,
        }
    }
}

/// How a loader packs documents into windows ([`LoaderBuilder::with_packing`](crate::loader::LoaderBuilder::with_packing)).
///
/// A *document* is a level-0 row; its *tokens* are the elements of the length column under
/// it (by default the innermost level of the first column with levels, see
/// [`LoaderBuilder::with_length_column`](crate::loader::LoaderBuilder::with_length_column)). Two
/// ways of packing ([`PackMode`]):
///
/// - **concatenate and split** ([`PackMode::Split`], what [`Packing::new`] makes): the
///   documents, in the epoch's order, are one stream of tokens cut into windows of exactly
///   `seq_len` tokens; window `w` holds tokens `w·seq_len .. w·seq_len + L` of the stream,
///   where `L` is `seq_len`, or `seq_len + 1` with [`Packing::with_extra_token`] (input and
///   label overlap by one token, as Megatron-LM's GPTDataset makes its samples). A document
///   may continue in the next window. The tail that does not fill a window is dropped and
///   counted ([`Windows::dropped_tokens`](crate::loader::Windows::dropped_tokens)), or padded (`pad_last`).
/// - **best fit** ([`PackMode::BestFit`]): whole documents into windows of `seq_len`
///   tokens by best-fit decreasing within a look-ahead of documents; a document is never
///   split, except one longer than a window, which is cut into windows' worth of pieces or
///   dropped ([`Overlong`]). Windows are padded to `L` ([`Windows::padding_fraction`](crate::loader::Windows::padding_fraction)).
///
/// ```text
/// documents  |a a a a a|b b|c c c c c c c|        stream of 14 tokens, seq_len 4
/// windows    |a a a a|a b b c|c c c c|c c · ·     3 windows, 2 tokens dropped (or padded)
/// pieces     (a,0,4)  (a,4,1)(b,0,2)(c,0,1)  (c,1,4)
/// cu_seqlens [0, 4, 5, 7, 8, 12]                   per batch of windows, int32 from 0
/// ```
///
/// Each window is a list of [`Piece`](crate::loader::Piece)s `(row, first_token,
/// n_tokens)`. A packed batch holds `batch_size` windows: each column whose rows have as
/// many elements as the length column's (the tokens, and columns aligned with them such as
/// labels or loss masks) as a LoD tensor of two levels, windows then pieces, so that level
/// 1's offsets are the `cu_seqlens` varlen attention takes
/// ([`Batch::cu_seqlens`](crate::loader::Batch::cu_seqlens)). A side column, or a tensor of
/// one element per row (a label, an id), is carried per window as the list of the values of
/// the documents its pieces come from, in piece order (a side column of lists; a tensor of
/// one level). Other tensor columns are left out.
///
/// # Example
/// ```
/// use lodtensor::loader::Packing;
/// let megatron = Packing::new(2048).with_extra_token(true);
/// assert_eq!((megatron.seq_len(), megatron.window_len()), (2048, 2049));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    seq_len: usize,
    extra_token: bool,
    mode: PackMode,
}

impl Packing {
    /// Concatenate and split into windows of `seq_len` tokens, the last partial window
    /// dropped.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::{PackMode, Packing};
    /// assert_eq!(Packing::new(512).mode(), PackMode::Split { pad_last: false });
    /// ```
    pub fn new(seq_len: usize) -> Self {
        Packing {
            seq_len,
            extra_token: false,
            mode: PackMode::Split { pad_last: false },
        }
    }

    /// Windows of `seq_len + 1` tokens, window `w + 1` starting at the last token of window
    /// `w` (Megatron-LM's `add_extra_token_to_sequence`).
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Packing;
    /// assert_eq!(Packing::new(4).with_extra_token(true).window_len(), 5);
    /// ```
    pub fn with_extra_token(mut self, extra: bool) -> Self {
        self.extra_token = extra;
        self
    }

    /// Packs as `mode` says.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::{PackMode, Packing};
    /// let padded = Packing::new(4).with_mode(PackMode::Split { pad_last: true });
    /// assert_eq!(padded.mode(), PackMode::Split { pad_last: true });
    /// ```
    pub fn with_mode(mut self, mode: PackMode) -> Self {
        self.mode = mode;
        self
    }

    /// Tokens per window, without the extra token.
    ///
    /// ```
    /// assert_eq!(lodtensor::loader::Packing::new(4).seq_len(), 4);
    /// ```
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Whether windows have `seq_len + 1` tokens, overlapping by one.
    ///
    /// ```
    /// assert!(!lodtensor::loader::Packing::new(4).extra_token());
    /// ```
    pub fn extra_token(&self) -> bool {
        self.extra_token
    }

    /// How documents go into windows.
    ///
    /// ```
    /// use lodtensor::loader::{PackMode, Packing};
    /// assert!(matches!(Packing::new(4).mode(), PackMode::Split { .. }));
    /// ```
    pub fn mode(&self) -> PackMode {
        self.mode
    }

    /// Deprecated: [`Packing::with_mode`] with [`PackMode::Split`]. Pads the epoch's last
    /// partial window; ignored in best fit.
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use lodtensor::loader::{PackMode, Packing};
    /// assert_eq!(Packing::new(4).with_pad_last(true).mode(), PackMode::Split { pad_last: true });
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `with_mode(PackMode::Split { pad_last })`"
    )]
    pub fn with_pad_last(mut self, pad: bool) -> Self {
        if let PackMode::Split { pad_last } = &mut self.mode {
            *pad_last = pad;
        }
        self
    }

    /// Deprecated: [`Packing::with_mode`] with [`PackMode::BestFit`] (an overlong document
    /// cut unless [`Packing::with_overlong`] came before, in best fit).
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use lodtensor::loader::{PackMode, Packing};
    /// assert_eq!(Packing::new(4).with_best_fit(64).mode(), PackMode::best_fit(64));
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `with_mode(PackMode::BestFit { lookahead, overlong })`"
    )]
    pub fn with_best_fit(mut self, lookahead: usize) -> Self {
        let overlong = match self.mode {
            PackMode::BestFit { overlong, .. } => overlong,
            PackMode::Split { .. } => Overlong::Cut,
        };
        self.mode = PackMode::BestFit {
            lookahead,
            overlong,
        };
        self
    }

    /// Deprecated: [`Packing::with_mode`] with [`PackMode::BestFit`]. What best fit does
    /// with a document longer than a window; ignored in concatenate and split.
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use lodtensor::loader::{Overlong, PackMode, Packing};
    /// let packing = Packing::new(4).with_best_fit(8).with_overlong(Overlong::Drop);
    /// assert_eq!(packing.mode(), PackMode::BestFit { lookahead: 8, overlong: Overlong::Drop });
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `with_mode(PackMode::BestFit { lookahead, overlong })`"
    )]
    pub fn with_overlong(mut self, new: Overlong) -> Self {
        if let PackMode::BestFit { overlong, .. } = &mut self.mode {
            *overlong = new;
        }
        self
    }

    /// Tokens per window: `seq_len`, plus one with the extra token.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Packing;
    /// assert_eq!(Packing::new(4).window_len(), 4);
    /// ```
    pub fn window_len(&self) -> usize {
        self.seq_len + usize::from(self.extra_token)
    }

    /// These options with windows of `seq_len` tokens (a pack length schedule's value).
    pub(crate) fn of_len(mut self, seq_len: usize) -> Packing {
        self.seq_len = seq_len;
        self
    }

    /// The words hashed into a loader's fingerprint: the same as when every setting was a
    /// field of its own (a mode's absent settings at their old defaults), so positions
    /// saved then still resume.
    pub(crate) fn hash_words(&self) -> [u64; 7] {
        let (split, pad_last, lookahead, overlong) = match self.mode {
            PackMode::Split { pad_last } => (true, pad_last, 1024, Overlong::Cut),
            PackMode::BestFit {
                lookahead,
                overlong,
            } => (false, false, lookahead, overlong),
        };
        let overlong = match overlong {
            Overlong::Cut => 0,
            Overlong::Drop => 1,
        };
        [
            4,
            self.seq_len as u64,
            self.extra_token as u64,
            split as u64,
            pad_last as u64,
            lookahead as u64,
            overlong,
        ]
    }
}
