//! Nix's base32: the 32-character alphabet without `e o u t`, written from
//! the last 5-bit group first. Bytes in, text out, and back.
//!
//! It is not RFC 4648 base32: store path hashes and `sha256:…` hashes that
//! Nix prints use this form, so it must match Nix bit for bit.

use thiserror::Error;

/// The alphabet of `src/libutil/hash.cc` (`base32Chars`).
pub const ALPHABET: &[u8; 32] = b"0123456789abcdfghijklmnpqrsvwxyz";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum Base32Error {
    #[error("'{0}' is not a Nix base32 character (the alphabet is {alphabet})", alphabet = std::str::from_utf8(ALPHABET).unwrap())]
    BadChar(char),
    #[error("{len} characters are not the Nix base32 form of any byte string")]
    BadLength { len: usize },
    #[error("the Nix base32 text has bits set beyond the last byte")]
    TrailingBits,
}

/// The length of the encoding of `bytes` bytes.
pub const fn encoded_len(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes * 8 - 1) / 5 + 1
    }
}

pub fn encode(bytes: &[u8]) -> String {
    let len = encoded_len(bytes.len());
    let mut out = String::with_capacity(len);
    for n in (0..len).rev() {
        let bit = n * 5;
        let (i, j) = (bit / 8, bit % 8);
        let low = u16::from(bytes[i]) >> j;
        let high = bytes.get(i + 1).map_or(0, |&b| u16::from(b) << (8 - j));
        out.push(ALPHABET[usize::from((low | high) & 0x1f)] as char);
    }
    out
}

/// Decodes text of exactly `encoded_len(n)` characters into its `n` bytes.
pub fn decode(text: &str) -> Result<Vec<u8>, Base32Error> {
    let size = text.len() * 5 / 8;
    if encoded_len(size) != text.len() {
        return Err(Base32Error::BadLength { len: text.len() });
    }
    let mut out = vec![0u8; size];
    for (n, c) in text.chars().rev().enumerate() {
        let digit = ALPHABET
            .iter()
            .position(|&a| a as char == c)
            .ok_or(Base32Error::BadChar(c))? as u16;
        let bit = n * 5;
        let (i, j) = (bit / 8, bit % 8);
        out[i] |= (digit << j) as u8;
        let carry = digit >> (8 - j);
        match out.get_mut(i + 1) {
            Some(next) => *next |= carry as u8,
            None if carry != 0 => return Err(Base32Error::TrailingBits),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers() {
        // sha256("") as Nix prints it (`nix-hash --type sha256 --to-base32 e3b0…b855`).
        let empty = hex_bytes("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(
            encode(&empty),
            "0mdqa9w1p6cmli6976v4wi0sw9r4p5prkj7lzfd1877wk11c9c73"
        );
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0xff]), "7z");
        assert_eq!(decode("7z").unwrap(), vec![0xff]);
    }

    #[test]
    fn rejects_bad_text() {
        assert_eq!(decode("e0"), Err(Base32Error::BadChar('e')));
        assert_eq!(decode("abc"), Err(Base32Error::BadLength { len: 3 }));
        // '8' = 0b01000 puts a bit into a ninth bit of a one-byte string.
        assert_eq!(decode("8z"), Err(Base32Error::TrailingBits));
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    proptest! {
        #[test]
        fn round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }

        #[test]
        fn decode_never_panics(text in ".{0,60}") {
            let _ = decode(&text);
        }
    }
}
