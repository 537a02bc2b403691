//! A shard's footer and record-batch messages as one entry of the node's cache, so that
//! the node's other processes read them from disk: the entry is whole or refused (its
//! CRC-32C), and what it holds is then checked as bytes from the store are.
//!
//! ```text
//! "LTLAYOU1" │ footer bytes (u64) │ messages (u64) │ each message's bytes (u64 …)
//!            │ footer │ message 0 │ message 1 │ … │ CRC-32C of all before (u32)
//! ```
//! (integers little-endian)

use bytes::Bytes;

/// The first bytes of an entry, with its version.
const MAGIC: &[u8; 8] = b"LTLAYOU1";

/// The entry of a shard whose end from its footer on is `footer` and whose record
/// batches' messages are `messages`.
pub(super) fn encode(footer: &[u8], messages: &[Bytes]) -> Vec<u8> {
    let body: usize = footer.len() + messages.iter().map(Bytes::len).sum::<usize>();
    let mut out = Vec::with_capacity(28 + 8 * messages.len() + body);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(footer.len() as u64).to_le_bytes());
    out.extend_from_slice(&(messages.len() as u64).to_le_bytes());
    for m in messages {
        out.extend_from_slice(&(m.len() as u64).to_le_bytes());
    }
    out.extend_from_slice(footer);
    for m in messages {
        out.extend_from_slice(m);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The footer and messages of the entry `bytes` (slices of it, no copy); `None` for an
/// entry that is not whole: another magic, a checksum that differs, lengths that do not
/// add up to its size.
pub(super) fn decode(bytes: &Bytes) -> Option<(Bytes, Vec<Bytes>)> {
    let body = bytes.len().checked_sub(4)?;
    let crc = u32::from_le_bytes(bytes[body..].try_into().ok()?);
    if bytes.get(..8)? != MAGIC || crc32c::crc32c(&bytes[..body]) != crc {
        return None;
    }
    let mut at = 8;
    let mut word = || {
        let w = bytes.get(at..at + 8)?;
        at += 8;
        usize::try_from(u64::from_le_bytes(w.try_into().ok()?)).ok()
    };
    let footer = word()?;
    let count = word()?;
    // Each message's length takes 8 bytes of the entry: a count past that is refused
    // before anything is sized from it.
    if count > body / 8 {
        return None;
    }
    let lengths: Vec<usize> = (0..count).map(|_| word()).collect::<Option<_>>()?;
    let mut start = at;
    let mut next = |len: usize| {
        let end = start.checked_add(len).filter(|&e| e <= body)?;
        let slice = bytes.slice(start..end);
        start = end;
        Some(slice)
    };
    let footer = next(footer)?;
    let messages: Vec<Bytes> = lengths.into_iter().map(&mut next).collect::<Option<_>>()?;
    (start == body).then_some((footer, messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_decodes_to_what_was_encoded() {
        let messages = [Bytes::from_static(b"first"), Bytes::from_static(b"")];
        let entry = Bytes::from(encode(b"footer", &messages));
        let (footer, back) = decode(&entry).expect("whole");
        assert_eq!((&footer[..], &back[..]), (&b"footer"[..], &messages[..]));
    }

    /// Every byte changed and every length cut: refused, never a panic.
    #[test]
    fn a_changed_or_truncated_entry_is_refused() {
        let messages = [Bytes::from_static(b"abc"), Bytes::from_static(b"defgh")];
        let entry = encode(b"footer!", &messages);
        for i in 0..entry.len() {
            let mut changed = entry.clone();
            changed[i] ^= 0x40;
            assert!(decode(&Bytes::from(changed)).is_none(), "byte {i}");
            assert!(
                decode(&Bytes::copy_from_slice(&entry[..i])).is_none(),
                "{i} bytes"
            );
        }
    }
}
