//! Opaque ids: secrets that name a row to whoever is given one.
//!
//! A job's is its id and its owner encrypted under the installation's key (AES-256, one block):
//! a keyed permutation, so nothing is stored or indexed (a column and a unique index on `jobs`
//! and on each month of `job_history` were written with every job), and without the key nobody
//! can compute one, nor learn from one whose job it names. Four bytes of zeros in the block make
//! a made-up id decrypt to something that names no job, but for one guess in 2^32, and then it
//! must name a job that exists and its owner too.
//!
//! Groups and workers, few and long-lived, keep stored ids: UUIDs whose first 48 bits are the
//! time of creation in milliseconds (RFC 9562, version 7) and whose other 74 are random, so that
//! new ids land at the end of their unique index.

use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use aes::Aes256;

/// The opaque id of job `id` of `owner` under `key`.
pub fn job_opaque_id(key: &[u8; 32], id: i64, owner: u32) -> [u8; 16] {
    let mut block = [0u8; 16];
    block[..8].copy_from_slice(&id.to_be_bytes());
    block[8..12].copy_from_slice(&owner.to_be_bytes());
    let mut block = Array::from(block);
    Aes256::new(&Array::from(*key)).encrypt_block(&mut block);
    block.into()
}

/// The job (id, owner) an opaque id names under `key`, or None if it was not made by
/// [`job_opaque_id`] with this key.
pub fn job_of_opaque_id(key: &[u8; 32], opaque_id: [u8; 16]) -> Option<(i64, u32)> {
    let mut block = Array::from(opaque_id);
    Aes256::new(&Array::from(*key)).decrypt_block(&mut block);
    let block: [u8; 16] = block.into();
    (block[12..] == [0; 4]).then(|| {
        (
            i64::from_be_bytes(block[..8].try_into().expect("8 bytes")),
            u32::from_be_bytes(block[8..12].try_into().expect("4 bytes")),
        )
    })
}

/// A version-7 UUID for `unix_millis` (truncated to 48 bits) and 10 random bytes.
pub fn time_ordered_uuid(unix_millis: u64, random: [u8; 10]) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&unix_millis.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random);
    bytes[6] = 0x70 | (bytes[6] & 0x0f); // version 7
    bytes[8] = 0x80 | (bytes[8] & 0x3f); // variant 10
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn a_job_opaque_id_names_its_job_and_owner_back() {
        for (id, owner) in [(1, 10), (2, 10), (1, 11), (i64::MAX, u32::MAX), (0, 0)] {
            let opaque = job_opaque_id(&KEY, id, owner);
            assert_eq!(job_of_opaque_id(&KEY, opaque), Some((id, owner)));
        }
    }

    #[test]
    fn job_opaque_ids_differ_by_job_owner_and_key() {
        let one = job_opaque_id(&KEY, 1, 10);
        assert_ne!(one, job_opaque_id(&KEY, 2, 10));
        assert_ne!(one, job_opaque_id(&KEY, 1, 11));
        assert_ne!(one, job_opaque_id(&[8; 32], 1, 10));
        // Nothing of the id shows: consecutive jobs' ids share no prefix a reader could sort by.
        assert_ne!(one[..4], job_opaque_id(&KEY, 2, 10)[..4]);
    }

    #[test]
    fn an_opaque_id_changed_or_made_up_names_no_job() {
        let mut changed = job_opaque_id(&KEY, 1, 10);
        changed[15] ^= 1;
        assert_eq!(job_of_opaque_id(&KEY, changed), None);
        assert_eq!(job_of_opaque_id(&[8; 32], job_opaque_id(&KEY, 1, 10)), None);
        let named = (0u8..=255)
            .filter(|n| job_of_opaque_id(&KEY, [*n; 16]).is_some())
            .count();
        assert_eq!(named, 0);
    }

    #[test]
    fn version_variant_and_time_in_their_places() {
        let id = time_ordered_uuid(0x0123_4567_89ab, [0xff; 10]);
        assert_eq!(&id[..6], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab]);
        assert_eq!(id[6] >> 4, 7);
        assert_eq!(id[8] >> 6, 0b10);
        assert_eq!(&id[9..], &[0xff; 7]);
    }

    #[test]
    fn later_ids_sort_after_earlier_ones_whatever_their_random_bits() {
        assert!(time_ordered_uuid(1_000, [0xff; 10]) < time_ordered_uuid(1_001, [0x00; 10]));
    }
}
