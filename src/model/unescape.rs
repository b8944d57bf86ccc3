//! A JSON string literal, unescaped straight onto the end of a `String`, its UTF-8 checked in
//! the same pass.
//!
//! This is the inner loop of reading a Messages stream: nearly every byte of a reply is inside
//! the string of a delta. The loop reads eight bytes at a time and stops only at a byte that
//! needs a decision: the closing quote, a backslash, a control character (which JSON forbids
//! raw) or a non-ASCII byte. Plain words are copied whole, eight bytes at a time; a run of
//! non-ASCII bytes is checked as UTF-8 by the standard library and copied; an escape appends
//! the character it stands for.
//!
//! The loop writes into the spare capacity of the `String` (reserved up front: a value is never
//! longer than its literal), whole words at a time, and the `String`'s length moves only once,
//! when the literal has been read to its end and found to be valid: the two `unsafe` steps of
//! [`unescape_into`] rest on that.

use std::mem::MaybeUninit;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is `"`, `\`, a control character (below 0x20) or
/// not ASCII, and maybe of some bytes after the first such byte, never before it: the lowest
/// set bit marks the first byte that ends a run of plain ASCII string characters.
#[inline]
fn stops(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x;
    (zero_byte(quote) | zero_byte(backslash) | word.wrapping_sub(ONES * 0x20) | word) & HIGHS
}

/// Whether `byte` ends a run of plain ASCII string characters ([`stops`], one byte).
#[inline]
fn is_stop(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || !(0x20..0x80).contains(&byte)
}

/// What each byte after a backslash stands for in a JSON string: the byte it unescapes to,
/// or 0 for `u` (four hex digits follow) and for anything JSON does not allow.
const UNESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// Unescape the JSON string literal whose contents start at `bytes[start]` (just after its
/// opening quote) onto the end of `out`, and return where the literal ends (just past its
/// closing quote).
///
/// `None`, with `out` as it was, for anything serde would not read as the same string from
/// the same bytes: raw control characters, unknown escapes, lone surrogates, bytes that are
/// not UTF-8 (a lenient reader replaces those, serde does not see them) or a literal that does
/// not end within `bytes`. The caller then leaves the input to a slower, general reader.
pub fn unescape_into(bytes: &[u8], start: usize, out: &mut String) -> Option<usize> {
    // The value is never longer than the literal, which lies within `bytes[start..]`.
    let room = bytes.len().checked_sub(start)?;
    // SAFETY: the `String`'s bytes are only changed by `set_len` below, after `unescape`
    // returned `Some`: the `len` bytes it wrote after the old end are then initialised (it
    // wrote each of them) and UTF-8 (ASCII copied as it is, runs of non-ASCII bytes the
    // standard library accepted, the characters escapes stand for). A refusal or a panic
    // leaves the `String` as it was.
    let buf = unsafe { out.as_mut_vec() };
    buf.reserve(room);
    let old = buf.len();
    let (end, len) = unescape(bytes, start, &mut buf.spare_capacity_mut()[..room])?;
    // Every write into the `room` bytes is bounds-checked, so `len` cannot exceed them.
    debug_assert!(len <= room);
    // SAFETY: see above; the `len` bytes after `old`, within the room reserved, were written.
    unsafe { buf.set_len(old + len) };
    debug_assert!(std::str::from_utf8(&buf[old..]).is_ok(), "unescape appended invalid UTF-8");
    Some(end)
}

/// Eight bytes into `out` at `at`.
#[inline(always)]
fn put8(out: &mut [MaybeUninit<u8>], at: usize, word: [u8; 8]) {
    for (slot, byte) in out[at..at + 8].iter_mut().zip(word) {
        slot.write(byte);
    }
}

/// The loop of [`unescape_into`]: the value of the literal written to the start of `out`
/// (which has room for all of `bytes[start..]`); where the literal ends and how many bytes
/// were written. Nothing written is used unless this returns `Some`, and only then is all of
/// it UTF-8. The output never runs ahead of the input: after reading up to `at`, at most
/// `at - start` bytes were written, so a word written at the output's end fits.
#[inline]
fn unescape(bytes: &[u8], start: usize, out: &mut [MaybeUninit<u8>]) -> Option<(usize, usize)> {
    let mut at = start;
    let mut len = 0;
    loop {
        // Eight bytes at a time: the word is written whole and only its plain bytes counted;
        // the first stop in it is handled from the word itself, a plain escape without leaving
        // the loop.
        while let Some(word) = bytes.get(at..at + 8) {
            let word: [u8; 8] = word.try_into().ok()?;
            put8(out, len, word);
            let value = u64::from_le_bytes(word);
            let found = stops(value);
            if found == 0 {
                at += 8;
                len += 8;
                continue;
            }
            let shift = found.trailing_zeros() & !7;
            let plain = (shift / 8) as usize;
            at += plain;
            len += plain;
            // The stop byte, taken from the word in a register.
            match (value >> shift) as u8 {
                b'\\' => {
                    let byte = UNESCAPE[usize::from(*bytes.get(at + 1)?)];
                    if byte == 0 {
                        break;
                    }
                    out[len].write(byte);
                    len += 1;
                    at += 2;
                }
                b'"' => return Some((at + 1, len)),
                _ => break,
            }
        }
        // Any other stop, and the last few bytes, one at a time; back to words when eight
        // bytes are left.
        loop {
            while let Some(&byte) = bytes.get(at)
                && !is_stop(byte)
            {
                out[len].write(byte);
                at += 1;
                len += 1;
            }
            match *bytes.get(at)? {
                b'"' => return Some((at + 1, len)),
                b'\\' => {
                    let escaped = *bytes.get(at + 1)?;
                    let byte = UNESCAPE[usize::from(escaped)];
                    if byte != 0 {
                        out[len].write(byte);
                        len += 1;
                        at += 2;
                    } else if escaped == b'u' {
                        let (ch, used) = unicode_escape(&bytes[at..])?;
                        for byte in ch.encode_utf8(&mut [0; 4]).bytes() {
                            out[len].write(byte);
                            len += 1;
                        }
                        at += used;
                    } else {
                        return None;
                    }
                }
                0x80.. => {
                    // A run of non-ASCII bytes lies between ASCII bytes, which no multi-byte
                    // character contains: it is UTF-8 exactly when it is so on its own.
                    let run_len = bytes[at..].iter().take_while(|&&b| b >= 0x80).count();
                    let run = &bytes[at..at + run_len];
                    if !is_utf8(run) {
                        return None;
                    }
                    for (slot, &byte) in out[len..len + run_len].iter_mut().zip(run) {
                        slot.write(byte);
                    }
                    at += run_len;
                    len += run_len;
                }
                // JSON forbids raw control characters inside strings.
                _ => return None,
            }
            if bytes.len() - at >= 8 {
                break;
            }
        }
    }
}

/// Whether `run`, bytes that are all 0x80 or above, is UTF-8: one character of two or three
/// bytes (accented letters, most symbols) is checked here against the well-formed sequences
/// of the Unicode standard (table 3-7), anything else by the standard library.
#[inline]
fn is_utf8(run: &[u8]) -> bool {
    match *run {
        [0xC2..=0xDF, 0x80..=0xBF] => true,
        [0xE0, 0xA0..=0xBF, 0x80..=0xBF]
        | [0xE1..=0xEC | 0xEE..=0xEF, 0x80..=0xBF, 0x80..=0xBF]
        | [0xED, 0x80..=0x9F, 0x80..=0xBF] => true,
        _ => std::str::from_utf8(run).is_ok(),
    }
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, at the start of `bytes`: the character and
/// the bytes it took.
fn unicode_escape(bytes: &[u8]) -> Option<(char, usize)> {
    let first = hex4(bytes.get(2..6)?)?;
    match first {
        0xD800..=0xDBFF => {
            if bytes.get(6..8)? != b"\\u" {
                return None;
            }
            let second = hex4(bytes.get(8..12)?)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return None;
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(first)?, 6)),
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde makes of `literal`, the quoted JSON string.
    fn serde(literal: &[u8]) -> Option<String> {
        serde_json::from_slice::<String>(literal).ok()
    }

    /// Unescape the literal at the start of `bytes` after some text already in the output:
    /// the string and where the literal ended. A refusal must leave the output untouched.
    fn ours_at(bytes: &[u8]) -> Option<(String, usize)> {
        let mut out = String::from("prefix·");
        match unescape_into(bytes, 1, &mut out) {
            Some(end) => Some((out.strip_prefix("prefix·").unwrap().to_owned(), end)),
            None => {
                assert_eq!(out, "prefix·");
                None
            }
        }
    }

    /// [`ours_at`] for a whole literal, which must end at its last byte.
    fn ours(literal: &[u8]) -> Option<String> {
        let (text, end) = ours_at(literal)?;
        assert_eq!(end, literal.len(), "the literal ends at its closing quote");
        Some(text)
    }

    /// Whatever the bytes, we read what serde reads from the literal we say we read, and refuse
    /// only what serde refuses.
    fn agrees_with_serde(bytes: &[u8]) -> Result<(), String> {
        match ours_at(bytes) {
            Some((text, end)) if serde(&bytes[..end]).as_ref() == Some(&text) => Ok(()),
            None if serde(bytes).is_none() => Ok(()),
            got => Err(format!("{:?}: ours {got:?}, serde {:?}", String::from_utf8_lossy(bytes), serde(bytes))),
        }
    }

    #[test]
    fn escapes_decode_like_serde() {
        let literals: &[&[u8]] = &[
            br#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            br#""\u0041\u00e9\u00E9\u2713\ud83d\ude00 ok""#,
            br#""\u0000 nul""#,
            br#""lone \ud800 lead""#,
            br#""lone \udc00 trail""#,
            br#""bad pair \ud83d\u0041""#,
            br#""short \u12""#,
            br#""not hex \u12G4""#,
            br#""unknown \q""#,
            "\"caf\u{e9} \u{2713} \u{1F600} and a long plain ASCII tail\"".as_bytes(),
            b"\"raw\ttab\"",
            b"\"raw \x7f delete is allowed\"",
            b"\"bad \xff byte\"",
            b"\"cut \xe2\x82 char\"",
            b"\"overlong \xc0\xaf\"",
            b"\"surrogate \xed\xa0\x80\"",
            b"\"\"",
        ];
        for literal in literals {
            assert_eq!(ours(literal), serde(literal), "{}", String::from_utf8_lossy(literal));
        }
    }

    #[test]
    fn the_short_utf8_check_agrees_with_the_standard_library() {
        let high = 0x80..=0xFFu8;
        for a in high.clone() {
            for b in high.clone() {
                assert_eq!(is_utf8(&[a, b]), std::str::from_utf8(&[a, b]).is_ok(), "{a:#x} {b:#x}");
                for c in high.clone() {
                    assert_eq!(is_utf8(&[a, b, c]), std::str::from_utf8(&[a, b, c]).is_ok(), "{a:#x} {b:#x} {c:#x}");
                }
            }
        }
    }

    #[test]
    fn every_two_byte_sequence_reads_like_serde() {
        for lead in 0x80..=0xFFu8 {
            for next in 0..=0xFFu8 {
                for pad in 0..9 {
                    let mut literal = vec![b'"'];
                    literal.extend(std::iter::repeat_n(b'a', pad));
                    literal.extend([lead, next]);
                    literal.extend(b"bc\"");
                    assert_eq!(agrees_with_serde(&literal), Ok(()), "{lead:#x} {next:#x} after {pad}");
                }
            }
        }
    }

    #[test]
    fn unterminated_literals_are_refused_at_every_length() {
        let literal = "\"0123456789 é \\n \\u00e9 0123456789\"".as_bytes();
        for cut in 1..literal.len() {
            assert_eq!(ours(&literal[..cut]), None, "cut at {cut}");
        }
        assert_eq!(ours(literal).as_deref(), Some("0123456789 é \n é 0123456789"));
    }

    #[test]
    fn every_byte_value_at_every_offset_stops_the_word_scan_where_it_should() {
        for byte in 0..=255u8 {
            // Plain ASCII goes straight through; everything else is read by the slow arms.
            for pos in 0..19 {
                let mut literal = vec![b'"'];
                literal.extend(std::iter::repeat_n(b'a', 19));
                literal[1 + pos] = byte;
                literal.push(b'"');
                assert_eq!(agrees_with_serde(&literal), Ok(()), "{byte:#x} at {pos}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_encoded_string_round_trips(text in ".*") {
            let literal = serde_json::to_string(&text).unwrap();
            proptest::prop_assert_eq!(ours(literal.as_bytes()), Some(text));
        }

        #[test]
        fn any_bytes_agree_with_serde(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let mut literal = vec![b'"'];
            literal.extend(&body);
            literal.push(b'"');
            proptest::prop_assert_eq!(agrees_with_serde(&literal), Ok(()));
        }

        #[test]
        fn escape_heavy_literals_agree_with_serde(body in r#"[a\\"/ubfnrtDd8Ee0-9\x00\x1f é✓]{0,40}"#) {
            proptest::prop_assert_eq!(agrees_with_serde(format!("\"{body}\"").as_bytes()), Ok(()));
        }
    }
}
