//! Ethereum-style addresses and signed messages, for a compute group's `join_address` (seed 000:
//! "an address whose signature is an alternative" to the join secret).
//!
//! An address is the last 20 bytes of the Keccak-256 hash of a secp256k1 public key, written as
//! `0x` and 40 hex digits, in mixed case when it carries its EIP-55 checksum. A worker proves it
//! holds the address's key by signing a message the way wallets sign text (EIP-191
//! `personal_sign`): the hash of `"\x19Ethereum Signed Message:\n" + length + message`, signed as
//! 65 bytes r, s, v; the signer's address is recovered from the signature and compared. The
//! curve and the hash are the RustCrypto crates', not ours.

use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use sha3::{Digest, Keccak256};

use crate::hex;

/// An address: 20 bytes.
pub type Address = [u8; 20];

/// Why a text is not an address, or not a signature.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not `0x` and 40 hex digits.
    AddressForm,
    /// Mixed case that is not the address's EIP-55 checksum (a mistyped address).
    AddressChecksum,
    /// Not `0x` and 130 hex digits (r, s, v).
    SignatureForm,
    /// v is not 27, 28, 0 or 1.
    SignatureRecovery,
}

impl Refusal {
    pub fn message(&self) -> &'static str {
        match self {
            Refusal::AddressForm => "an address is 0x and 40 hexadecimal digits",
            Refusal::AddressChecksum => {
                "the address's mixed case is not its EIP-55 checksum: a digit is mistyped"
            }
            Refusal::SignatureForm => "a signature is 0x and 130 hexadecimal digits (r, s and v)",
            Refusal::SignatureRecovery => "a signature's last byte (v) is 27, 28, 0 or 1",
        }
    }
}

fn keccak256(bytes: &[u8]) -> [u8; 32] {
    Keccak256::digest(bytes).into()
}

/// The hash that `personal_sign` signs for `message`.
pub fn message_hash(message: &[u8]) -> [u8; 32] {
    let mut hasher = Keccak256::new();
    hasher.update(format!("\x19Ethereum Signed Message:\n{}", message.len()));
    hasher.update(message);
    hasher.finalize().into()
}

fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.strip_prefix("0x")?.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut bytes = [0u8; N];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(bytes)
}

/// The address a text names: all lower case, all upper case, or its EIP-55 checksum.
pub fn parse_address(text: &str) -> Result<Address, Refusal> {
    let address = hex_bytes::<20>(text).ok_or(Refusal::AddressForm)?;
    let digits = &text[2..];
    let one_case = !digits.chars().any(|c| c.is_ascii_lowercase())
        || !digits.chars().any(|c| c.is_ascii_uppercase());
    if one_case || checksummed(&address)[2..] == *digits {
        Ok(address)
    } else {
        Err(Refusal::AddressChecksum)
    }
}

/// An address in lower case, `0x` first.
pub fn address_hex(address: &Address) -> String {
    format!("0x{}", hex(address))
}

/// An address written with its EIP-55 checksum: a letter is upper case where the matching
/// nibble of the hash of the lower-case digits is 8 or more.
pub fn checksummed(address: &Address) -> String {
    let lower = hex(address);
    let hash = keccak256(lower.as_bytes());
    let digits: String = lower
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let nibble = (hash[i / 2] >> if i % 2 == 0 { 4 } else { 0 }) & 0x0f;
            if nibble >= 8 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    format!("0x{digits}")
}

fn address_of(key: &VerifyingKey) -> Address {
    let point = key.to_encoded_point(false);
    let hash = keccak256(&point.as_bytes()[1..]);
    hash[12..].try_into().expect("20 bytes")
}

/// The address whose key signed `message` with `signature` (`0x`, r, s, v), or None when the
/// signature is well formed but names no key (it was not made over this message by anyone).
pub fn signer(message: &[u8], signature: &str) -> Result<Option<Address>, Refusal> {
    let bytes = hex_bytes::<65>(signature).ok_or(Refusal::SignatureForm)?;
    let v = match bytes[64] {
        27 | 28 => bytes[64] - 27,
        0 | 1 => bytes[64],
        _ => return Err(Refusal::SignatureRecovery),
    };
    let Ok(mut signature) = Signature::from_slice(&bytes[..64]) else {
        return Ok(None);
    };
    let mut recovery = RecoveryId::from_byte(v).expect("0 or 1");
    // Both s and n - s verify; recovery takes the low one, whose y parity is the other.
    if let Some(low) = signature.normalize_s() {
        signature = low;
        recovery = RecoveryId::new(!recovery.is_y_odd(), recovery.is_x_reduced());
    }
    Ok(
        VerifyingKey::recover_from_prehash(&message_hash(message), &signature, recovery)
            .ok()
            .map(|key| address_of(&key)),
    )
}

fn signing_key(secret: &[u8; 32]) -> SigningKey {
    SigningKey::from_slice(secret).expect("a secret key within the curve's order")
}

/// The address of the secret key `secret`.
pub fn address_of_secret(secret: &[u8; 32]) -> Address {
    address_of(signing_key(secret).verifying_key())
}

/// `message` signed with the secret key `secret` as a wallet signs it (v 27 or 28): what a
/// worker does to join by signature, and the tests.
pub fn sign(message: &[u8], secret: &[u8; 32]) -> String {
    let (signature, recovery) = signing_key(secret)
        .sign_prehash_recoverable(&message_hash(message))
        .expect("a signature");
    let mut bytes = signature.to_bytes().to_vec();
    bytes.push(27 + recovery.to_byte());
    format!("0x{}", hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    // web3.js's documented example: accounts.privateKeyToAccount and accounts.sign('Some data').
    const SECRET: &str = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
    const ADDRESS: &str = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23";
    const SIGNATURE: &str = "0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c";

    fn secret() -> [u8; 32] {
        hex_bytes::<32>(SECRET).unwrap()
    }

    #[test]
    fn a_known_signature_recovers_its_signer() {
        let address = parse_address(ADDRESS).unwrap();
        assert_eq!(signer(b"Some data", SIGNATURE), Ok(Some(address)));
        assert_eq!(sign(b"Some data", &secret()), SIGNATURE);
        assert_eq!(address_of_secret(&secret()), address);
        assert_eq!(
            hex(&message_hash(b"Some data")),
            "1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655"
        );
    }

    #[test]
    fn another_message_or_a_changed_signature_recovers_someone_else() {
        let address = parse_address(ADDRESS).unwrap();
        assert_ne!(signer(b"Some datA", SIGNATURE).unwrap(), Some(address));
        let changed = format!("{}1{}", &SIGNATURE[..10], &SIGNATURE[11..]);
        assert_ne!(signer(b"Some data", &changed).unwrap(), Some(address));
    }

    #[test]
    fn v_as_0_or_1_and_a_high_s_are_the_same_signature() {
        let address = parse_address(ADDRESS).unwrap();
        let zero_one = format!("{}01", &SIGNATURE[..130]);
        assert_eq!(signer(b"Some data", &zero_one), Ok(Some(address)));
        // s' = n - s with the other v.
        let bytes = hex_bytes::<65>(SIGNATURE).unwrap();
        let signature = Signature::from_slice(&bytes[..64]).unwrap();
        let (r, s) = signature.split_scalars();
        let high = Signature::from_scalars(r, -*s).unwrap();
        let mut high_bytes = high.to_bytes().to_vec();
        high_bytes.push(if bytes[64] == 27 { 28 } else { 27 });
        let high_text = format!("0x{}", hex(&high_bytes));
        assert_eq!(signer(b"Some data", &high_text), Ok(Some(address)));
    }

    #[test]
    fn malformed_signatures_are_refused() {
        for text in [
            "",
            "0x",
            "b91467",
            &SIGNATURE[2..],
            &SIGNATURE[..130],
            "0xzz",
        ] {
            assert_eq!(signer(b"x", text), Err(Refusal::SignatureForm), "{text}");
        }
        let bad_v = format!("{}1d", &SIGNATURE[..130]);
        assert_eq!(signer(b"x", &bad_v), Err(Refusal::SignatureRecovery));
        // r and s of zero name no key.
        let zeros = format!("0x{}1b", "0".repeat(128));
        assert_eq!(signer(b"x", &zeros), Ok(None));
    }

    #[test]
    fn addresses_in_one_case_or_with_their_checksum() {
        let address = parse_address(ADDRESS).unwrap();
        assert_eq!(checksummed(&address), ADDRESS);
        assert_eq!(parse_address(&ADDRESS.to_lowercase()), Ok(address));
        assert_eq!(
            parse_address(&format!("0x{}", ADDRESS[2..].to_uppercase())),
            Ok(address)
        );
        // One letter's case changed breaks the checksum.
        let mistyped = ADDRESS.replacen('E', "e", 1);
        assert_eq!(parse_address(&mistyped), Err(Refusal::AddressChecksum));
        for text in [
            "",
            "2c7536E3605D9C16a7a3D7b1898e529396a65c23",
            "0x2c75",
            "0xg c7536E3605D9C16a7a3D7b1898e529396a65c2",
        ] {
            assert_eq!(parse_address(text), Err(Refusal::AddressForm), "{text}");
        }
    }
}
