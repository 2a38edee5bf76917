//! A decoder that replays repeated blocks (`Decoder::replay`) reads the same
//! fields and keeps the same table as one that decodes every block, whatever
//! the blocks: repeated or not, reading the dynamic table or not, inserting
//! or not, resizing it or failing.

use super::*;

/// nginx 1.22's head for a static file: `:status` indexed, six fields
/// inserted with static names (five Huffman-coded), one literal new name.
const NGINX: &str = "887689aa6355e580ae212e1f6196dd6d5f4a09f5349fba82009c5021b816ae32253168df
    5f901d75d0620d263d4c1c892a56426c28e95c033132386c96dd6d5f4a09f5349fba82009c5021b8166e
    36153168df00832a47378bfe5c8c0403c5956781fcff008919085ad2b583aa62a3848fd24a8f";

/// The blocks the run picks from, and whether each may be replayed.
const BLOCKS: &[(&str, bool)] = &[
    (NGINX, true),
    // RFC 7541 C.4.1: static fields and one insertion.
    ("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", true),
    // C.4.2: reads index 62, the newest entry, which its own insertion
    // changes: the same bytes twice are different fields.
    ("8286 84be 5886 a8eb 1064 9cbf", false),
    // C.4.3: reads indexes 63 and 64.
    (
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        false,
    ),
    // A literal whose name is the newest dynamic entry.
    ("7e03 6f6e 65", false),
    // What servers on the `h2` crate (hyper's) send once their fields are
    // in the table: `:status` and dynamic entries indexed, and a literal
    // content-length not indexed. It reads the table and changes nothing,
    // so while the table stands still its bytes mean the same fields.
    ("88be bf0f 0d03 3132 38", true),
    ("be", true),
    // Size updates: to 0 (the table empties) and back to 4096.
    ("2088", false),
    ("3fe11f 88", false),
    // A truncated string: an error, never kept.
    ("8876 89aa 63", false),
];

#[test]
fn replayed_blocks_read_and_leave_the_table_as_decoded_ones() {
    let mut next = crate::test_support::xorshift(0x9e37_79b9_7f4a_7c15_u64);
    let blocks: Vec<(Vec<u8>, bool)> = BLOCKS.iter().map(|(b, pure)| (hex(b), *pure)).collect();
    let mut plain = Decoder::new(DEFAULT_TABLE_SIZE);
    let mut replaying = Decoder::new(DEFAULT_TABLE_SIZE);
    // What the replaying side kept of its last block, as `BlockDecoder` does.
    let mut kept: Option<Fields> = None;
    let mut replays = vec![0; blocks.len()];
    let mut pick = 0;
    for step in 0..5000 {
        // Mostly the same block again, sometimes another.
        if next() % 3 == 0 {
            pick = next() as usize % blocks.len();
        }
        let (block, _) = &blocks[pick];
        let want = decode(&mut plain, block);
        let got = match kept.as_ref() {
            Some(fields) if replaying.replay(block) => {
                replays[pick] += 1;
                Ok(fields.clone())
            }
            _ => {
                let got = decode(&mut replaying, block);
                kept = got.clone().ok().filter(|_| replaying.repeated());
                got
            }
        };
        assert_eq!(got, want, "fields at step {step} (block {pick})");
        assert_eq!(
            replaying.table().fields(),
            plain.table().fields(),
            "table after step {step} (block {pick})"
        );
        assert_eq!(replaying.table().size(), plain.table().size());
    }
    for (i, (_, pure)) in blocks.iter().enumerate() {
        // Every pure block was replayed, and no other.
        assert_eq!(
            replays[i] > 0,
            *pure,
            "block {i} replayed {} times",
            replays[i]
        );
    }
}

#[test]
fn a_block_is_kept_only_once_it_comes_twice_in_a_row() {
    let mut decoder = Decoder::new(DEFAULT_TABLE_SIZE);
    let nginx = hex(NGINX);
    let other = hex(BLOCKS[1].0);
    assert!(decode(&mut decoder, &nginx).is_ok());
    assert!(!decoder.repeated(), "first time");
    assert!(decode(&mut decoder, &other).is_ok());
    assert!(!decoder.repeated(), "another block");
    assert!(decode(&mut decoder, &nginx).is_ok());
    assert!(!decoder.repeated(), "not twice in a row");
    assert!(decode(&mut decoder, &nginx).is_ok());
    assert!(decoder.repeated(), "twice in a row");
    assert!(!decoder.replay(&other), "not the last block");
    assert!(decoder.replay(&nginx));
}

#[test]
fn a_block_replayed_until_the_table_is_all_its_own_then_inserts_nothing() {
    let blocks: Vec<Vec<u8>> = BLOCKS.iter().map(|(b, _)| hex(b)).collect();
    let (nginx, c41, reads_62) = (&blocks[0], &blocks[1], &blocks[2]);
    let mut plain = Decoder::new(DEFAULT_TABLE_SIZE);
    let mut replaying = Decoder::new(DEFAULT_TABLE_SIZE);
    // Another block's entries first, so the table is not nginx's alone
    // until nginx's insertions have pushed them out.
    for _ in 0..3 {
        decode(&mut plain, c41).unwrap();
        decode(&mut replaying, c41).unwrap();
    }
    let mut fixed_at = None;
    for round in 0..60 {
        let want = decode(&mut plain, nginx);
        if round < 2 {
            assert_eq!(decode(&mut replaying, nginx), want);
        } else {
            assert!(replaying.replay(nginx), "round {round}");
        }
        assert_eq!(
            replaying.table().fields(),
            plain.table().fields(),
            "round {round}"
        );
        assert_eq!(replaying.table().size(), plain.table().size());
        if replaying.is_fixed() && fixed_at.is_none() {
            fixed_at = Some(round);
            // Fixed only once C.4.1's entries (`:authority`) are gone.
            assert!(
                plain
                    .table()
                    .fields()
                    .iter()
                    .all(|(name, _)| name.as_slice() != b":authority"),
                "fixed at round {round} with another block's entries left"
            );
        }
    }
    let fixed_at = fixed_at.expect("the table became nginx's alone and stayed so");
    assert!(fixed_at > 2, "fixed at round {fixed_at}");
    // After the fixed stretch, a block that reads the table reads it right,
    // and the next replay starts counting afresh.
    for block in [reads_62, nginx, nginx, c41, nginx] {
        let want = decode(&mut plain, block);
        let got = match replaying.replay(block) {
            true => want.clone(),
            false => decode(&mut replaying, block),
        };
        assert_eq!(got, want);
        assert_eq!(replaying.table().fields(), plain.table().fields());
    }
    assert!(!replaying.is_fixed());
}
