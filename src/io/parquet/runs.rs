//! Parquet's RLE / bit-packed hybrid encoding, read and written as runs of equal values.
//!
//! Repetition and definition levels and dictionary indices are stored this way. A column
//! chunk of this crate's layout holds long runs (every definition level is the maximum,
//! every item of an element repeats at the deepest level), so reading runs instead of one
//! level per item is what makes decoding the levels cost little next to copying the values.
//!
//! ```text
//! run header (ULEB128) h:  h & 1 == 0  ->  an RLE run: h >> 1 copies of one value, stored
//!                                          in ceil(bit_width / 8) little-endian bytes
//!                          h & 1 == 1  ->  (h >> 1) groups of 8 values, bit_width bits
//!                                          each, packed least significant bit first
//! ```

/// Why the runs could not be read.
pub(super) type Fault = String;

/// The runs of an RLE / bit-packed hybrid buffer whose values are `bit_width` bits wide.
pub(super) struct Runs<'a> {
    buf: &'a [u8],
    pos: usize,
    bit_width: u8,
    /// Values of the bit-packed group being read, and how far into it.
    group: [u32; 8],
    group_len: usize,
    group_pos: usize,
    /// Bit-packed groups left after the current one.
    groups_left: usize,
}

impl<'a> Runs<'a> {
    /// The runs of `buf`.
    ///
    /// # Errors
    /// A bit width over 32.
    pub(super) fn new(buf: &'a [u8], bit_width: u8) -> Result<Self, Fault> {
        if bit_width > 32 {
            return Err(format!("a bit width of {bit_width}, more than 32"));
        }
        Ok(Runs {
            buf,
            pos: 0,
            bit_width,
            group: [0; 8],
            group_len: 0,
            group_pos: 0,
            groups_left: 0,
        })
    }

    /// The next run: a value and how many times it repeats (at least once). Runs past the
    /// end of the values encoded (padding of the last bit-packed group) are the caller's to
    /// ignore; the end of the buffer is an error.
    pub(super) fn next_run(&mut self) -> Result<(u32, usize), Fault> {
        loop {
            if self.group_pos < self.group_len {
                let value = self.group[self.group_pos];
                let start = self.group_pos;
                while self.group_pos < self.group_len && self.group[self.group_pos] == value {
                    self.group_pos += 1;
                }
                return Ok((value, self.group_pos - start));
            }
            if self.groups_left > 0 {
                self.groups_left -= 1;
                self.unpack_group()?;
                continue;
            }
            let header = self.uleb128()?;
            let count = usize::try_from(header >> 1)
                .map_err(|_| format!("a run of {} values", header >> 1))?;
            if header & 1 == 1 {
                if count == 0 {
                    continue;
                }
                self.groups_left = count;
                continue;
            }
            if count == 0 {
                return Err(format!("an RLE run of 0 values at byte {}", self.pos));
            }
            let width = usize::from(self.bit_width).div_ceil(8);
            let bytes = self.take(width)?;
            let mut le = [0u8; 4];
            le[..width].copy_from_slice(bytes);
            let value = u32::from_le_bytes(le);
            if self.bit_width < 32 && value >> self.bit_width != 0 {
                return Err(format!(
                    "an RLE run of value {value}, wider than {} bits",
                    self.bit_width
                ));
            }
            return Ok((value, count));
        }
    }

    /// Unpacks the next group of 8 bit-packed values.
    fn unpack_group(&mut self) -> Result<(), Fault> {
        let width = usize::from(self.bit_width);
        let bytes = self.take(width)?;
        if width <= 8 {
            // Levels: the whole group fits one word.
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(bytes);
            let word = u64::from_le_bytes(word);
            let mask = (1u64 << width) - 1;
            for (i, value) in self.group.iter_mut().enumerate() {
                *value = ((word >> (i * width)) & mask) as u32;
            }
        } else {
            let mask = (1u64 << width) - 1;
            for (i, value) in self.group.iter_mut().enumerate() {
                let bit = i * width;
                let first = bit / 8;
                let end = (first + 8).min(bytes.len());
                let mut word = [0u8; 8];
                word[..end - first].copy_from_slice(&bytes[first..end]);
                *value = ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32;
            }
        }
        self.group_len = 8;
        self.group_pos = 0;
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Fault> {
        let bytes = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or_else(|| format!("the runs end at byte {}, inside a run", self.buf.len()))?;
        self.pos += n;
        Ok(bytes)
    }

    fn uleb128(&mut self) -> Result<u64, Fault> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.take(1)?.first().expect("one byte taken");
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!(
            "a run header longer than 10 bytes at byte {}",
            self.pos
        ))
    }
}

/// The bit width of levels up to `max`.
pub(super) fn bit_width(max: i16) -> u8 {
    (16 - (max.max(0) as u16).leading_zeros()) as u8
}

/// The RLE / bit-packing hybrid encoding of levels (Parquet format, "Run Length Encoding /
/// Bit-Packing Hybrid"), fed with runs: a run of 8 or more equal values becomes an RLE run,
/// shorter ones gather into bit-packed groups of 8.
pub(super) struct Hybrid {
    bytes: Vec<u8>,
    bit_width: u8,
    /// Values not yet written, bit-packed when written.
    literals: Vec<u16>,
    /// The run being gathered: value and length.
    run: (u16, usize),
}

impl Hybrid {
    pub(super) fn new(max: i16) -> Self {
        Hybrid {
            bytes: Vec::new(),
            bit_width: bit_width(max),
            literals: Vec::new(),
            run: (0, 0),
        }
    }

    pub(super) fn push(&mut self, value: u16, count: usize) {
        if self.run.1 > 0 && self.run.0 == value {
            self.run.1 += count;
        } else {
            self.settle();
            self.run = (value, count);
        }
    }

    /// Writes the run being gathered: topping the literals up to whole groups, then as an
    /// RLE run if 8 or more values remain, else as literals.
    fn settle(&mut self) {
        let (value, count) = std::mem::take(&mut self.run);
        let fill = (8 - self.literals.len() % 8) % 8;
        if count >= fill + 8 {
            self.literals.extend(std::iter::repeat_n(value, fill));
            self.flush_literals();
            self.rle(value, count - fill);
        } else {
            self.literals.extend(std::iter::repeat_n(value, count));
            if self.literals.len() >= 512 {
                let whole = self.literals.len() / 8 * 8;
                let rest = self.literals.split_off(whole);
                self.flush_literals();
                self.literals = rest;
            }
        }
    }

    /// An RLE run: a ULEB128 header `count << 1`, then the value in whole bytes.
    fn rle(&mut self, value: u16, count: usize) {
        uleb128(&mut self.bytes, (count as u64) << 1);
        let width = usize::from(self.bit_width).div_ceil(8);
        self.bytes.extend_from_slice(&value.to_le_bytes()[..width]);
    }

    /// The literals as one bit-packed run (a ULEB128 header `groups << 1 | 1`, then the
    /// values, `bit_width` bits each from the least significant bit), padded with zeros to
    /// a whole group (only the last run can need it: readers stop at the page's count).
    fn flush_literals(&mut self) {
        if self.literals.is_empty() {
            return;
        }
        let groups = self.literals.len().div_ceil(8);
        self.literals.resize(groups * 8, 0);
        uleb128(&mut self.bytes, ((groups as u64) << 1) | 1);
        let (mut acc, mut bits) = (0u64, 0u32);
        for &v in &self.literals {
            acc |= u64::from(v) << bits;
            bits += u32::from(self.bit_width);
            while bits >= 8 {
                self.bytes.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        self.literals.clear();
    }

    pub(super) fn byte_len(&self) -> usize {
        self.bytes.len() + self.literals.len() * 2 + 16
    }

    pub(super) fn finish(&mut self) -> &[u8] {
        self.settle();
        self.flush_literals();
        &self.bytes
    }
}

fn uleb128(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(buf: &[u8], bit_width: u8, n: usize) -> Result<Vec<u32>, Fault> {
        let mut runs = Runs::new(buf, bit_width)?;
        let mut out = Vec::new();
        while out.len() < n {
            let (v, count) = runs.next_run()?;
            out.extend(std::iter::repeat_n(v, count));
        }
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn rle_and_bit_packed_runs() {
        // RLE: 5 copies of 3 (header 10), then one bit-packed group (header 3) of
        // 0..8 at 3 bits: 0b_010_001_000, ... packed LSB first.
        let mut buf = vec![10, 3, 3];
        let mut bits = 0u32;
        for (i, v) in (0u32..8).enumerate() {
            bits |= v << (3 * i);
        }
        buf.extend_from_slice(&bits.to_le_bytes()[..3]);
        let values = all(&buf, 3, 13).unwrap();
        assert_eq!(values, [3, 3, 3, 3, 3, 0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn truncated_and_malformed_runs_are_refused() {
        assert!(all(&[10], 3, 5).unwrap_err().contains("inside a run"));
        assert!(all(&[3, 0xff], 3, 8).unwrap_err().contains("inside a run"));
        assert!(all(&[0, 1], 3, 1).unwrap_err().contains("0 values"));
        assert!(
            all(&[10, 9], 3, 5)
                .unwrap_err()
                .contains("wider than 3 bits")
        );
        assert!(
            all(&[0xff; 12], 3, 5)
                .unwrap_err()
                .contains("longer than 10 bytes")
        );
        assert!(Runs::new(&[], 33).is_err());
    }

    #[test]
    fn bit_widths_of_levels() {
        assert_eq!([0, 1, 2, 3, 4, 7, 8].map(bit_width), [0, 1, 2, 2, 3, 3, 4]);
    }
    proptest! {
        #[test]
        fn hybrid_runs_read_back(
            max in 1i16..200,
            runs in proptest::collection::vec((0u16..200, 1usize..40), 0..60),
        ) {
            let mut hybrid = Hybrid::new(max);
            let mut expected = Vec::new();
            for &(value, count) in &runs {
                let value = value % (max as u16 + 1);
                hybrid.push(value, count);
                expected.extend(std::iter::repeat_n(u32::from(value), count));
            }
            let bytes = hybrid.finish().to_vec();
            let mut read = Runs::new(&bytes, bit_width(max)).unwrap();
            let mut got = Vec::new();
            while got.len() < expected.len() {
                let (value, count) = read.next_run().unwrap();
                got.extend(std::iter::repeat_n(value, count));
            }
            got.truncate(expected.len());
            prop_assert_eq!(got, expected);
        }
    }
}
