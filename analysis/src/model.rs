//! The launch and hardware model every analysis shares, at the bottom of
//! the crate: the block shape (and where it came from), warp formation,
//! and what one warp request costs on sm_70 and newer — 32-byte sectors
//! for global memory, 32 four-byte banks for shared memory.
//!
//! Linear thread id = x + y·Dx + z·Dx·Dy; warp w holds ids 32w … 32w+31.
//!
//! Owns: those numbers and the counting functions (the interpreter counts
//! with the same ones). Does not own: addresses (see `crate::memory`) or
//! which lanes are active (see `crate::facts`).

/// Threads per warp.
pub const WARP: usize = 32;
/// Bytes per global-memory sector.
pub const SECTOR: i64 = 32;
/// A block has at most this many threads.
pub const MAX_BLOCK_THREADS: u64 = 1024;

/// Where a kernel's block shape came from, most specific first. The
/// binary renders it (`--block`, the Cargo table…); the library only names
/// the kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ShapeSource {
    /// Given for every kernel on the command line.
    Cli,
    /// Given for this kernel by name (the name as configured).
    Kernel(String),
    /// The PTX's `.reqntid` directive.
    Reqntid,
    /// The block of the host code's launches of this kernel (a literal
    /// `LaunchConfig` beside the load of the kernel by name): the source
    /// file (as shown) and line.
    Launch { file: String, line: u32 },
    /// Given for every kernel of the package.
    Package,
    /// The PTX's `.maxntid` (CUDA C's `__launch_bounds__`): the largest
    /// block the kernel allows, taken as its block when nothing else is given.
    Maxntid,
    /// Nothing given: a default was assumed.
    #[default]
    Assumed,
}

/// One thread: its coordinates and lane within the warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    pub tid: [i64; 3],
    pub lane: i64,
}

/// The block shape used for a kernel and where it came from.
#[derive(Clone, Debug)]
pub struct Shape {
    pub block: [u32; 3],
    pub source: ShapeSource,
    lanes: std::sync::OnceLock<std::sync::Arc<[Lane]>>,
}

impl PartialEq for Shape {
    fn eq(&self, o: &Shape) -> bool {
        self.block == o.block && self.source == o.source
    }
}

impl Shape {
    /// A shape; dimensions are taken as at least 1, and a shape of more
    /// than [`MAX_BLOCK_THREADS`] threads is clamped to that many along x
    /// (no launch can have it; callers validate user input).
    pub fn new(block: [u32; 3], source: ShapeSource) -> Shape {
        let block = block.map(|d| d.max(1));
        let too_big = block.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).is_none_or(|n| n > MAX_BLOCK_THREADS);
        let block = if too_big { [MAX_BLOCK_THREADS as u32, 1, 1] } else { block };
        Shape { block, source, lanes: Default::default() }
    }
    /// Every thread of the block, by linear id.
    pub fn lanes(&self) -> &[Lane] {
        // (one table per block size, shared by every function's shapes: a module of many small
        // kernels has a shape per kernel)
        type Tables = Vec<([u32; 3], std::sync::Arc<[Lane]>)>;
        static TABLES: std::sync::Mutex<Tables> = std::sync::Mutex::new(Vec::new());
        self.lanes.get_or_init(|| {
            let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, t)) = tables.iter().find(|(b, _)| *b == self.block) {
                return t.clone();
            }
            let t: std::sync::Arc<[Lane]> = (0..self.threads()).map(|t| self.lane(t)).collect();
            // (a handful of sizes in practice; a long list is not kept)
            if tables.len() < 64 {
                tables.push((self.block, t.clone()));
            }
            t
        })
    }
    pub fn threads(&self) -> usize {
        self.block.iter().map(|&d| d as usize).product()
    }
    pub fn warps(&self) -> usize {
        self.threads().div_ceil(WARP)
    }
    pub fn lane(&self, linear: usize) -> Lane {
        let [dx, dy, _] = self.block.map(|d| d as usize);
        Lane { tid: [(linear % dx) as i64, ((linear / dx) % dy) as i64, (linear / (dx * dy)) as i64], lane: (linear % WARP) as i64 }
    }
    pub fn is_assumed(&self) -> bool {
        self.source == ShapeSource::Assumed
    }
}

/// The distinct sectors and the bytes that the union of half-open byte
/// ranges `[start, end)` covers (a warp's footprint): marked in bits where
/// the ranges lie within 4 KB ([`sectors_and_bytes_near`]), else counted
/// by sorting (`ranges` sorted in place, `sectors` a list to count in).
pub fn sectors_and_bytes(ranges: &mut [(i64, i64)], sectors: &mut Vec<i64>) -> (u32, u32) {
    if let Some(near) = sectors_and_bytes_near(ranges) {
        return near;
    }
    (distinct_sectors(ranges, sectors), covered_bytes(ranges) as u32)
}

/// The distinct sectors half-open byte ranges touch, counted by sorting
/// them (`sectors`: a list to count in).
fn distinct_sectors(ranges: &[(i64, i64)], sectors: &mut Vec<i64>) -> u32 {
    sectors.clear();
    sectors.extend(ranges.iter().flat_map(|&(s, e)| s.div_euclid(SECTOR)..=(e - 1).div_euclid(SECTOR)));
    sectors.sort_unstable();
    sectors.dedup();
    sectors.len() as u32
}

/// Bytes [`near_bits`] marks: 4 KB, a word to 64 bytes (two sectors).
const NEAR_WORDS: usize = 64;

/// [`sectors_and_bytes`] where the ranges lie within 4 KB: marked in bits,
/// not sorted. `None` for ranges spread wider (or none).
fn sectors_and_bytes_near(ranges: &[(i64, i64)]) -> Option<(u32, u32)> {
    let (_, bits) = near_bits(ranges)?;
    let bytes = bits.iter().map(|w| w.count_ones()).sum();
    let sectors = bits.iter().map(|&w| (w as u32 != 0) as u32 + ((w >> 32) != 0) as u32).sum();
    Some((sectors, bytes))
}

/// The bytes of ranges that lie within 4 KB, marked in bits from a base
/// on a 64-byte boundary: the base and the bits. `None` for ranges
/// spread wider (or none).
fn near_bits(ranges: &[(i64, i64)]) -> Option<(i64, [u64; NEAR_WORDS])> {
    // (one pass, given up as soon as the ranges spread too wide)
    let (mut lo, mut hi) = *ranges.first()?;
    for &(s, e) in &ranges[1..] {
        (lo, hi) = (lo.min(s), hi.max(e));
        if hi.saturating_sub(lo) > (NEAR_WORDS * 64) as i64 {
            return None;
        }
    }
    let base = lo.div_euclid(2 * SECTOR) * 2 * SECTOR;
    if hi.checked_sub(base)? > (NEAR_WORDS * 64) as i64 {
        return None;
    }
    let mut bits = [0u64; NEAR_WORDS];
    for &(s, e) in ranges {
        let (mut s, e) = ((s - base) as usize, (e - base) as usize);
        while s < e {
            // the bytes of this range in the word of byte `s`
            let (word, bit) = (s / 64, s % 64);
            let n = (e - s).min(64 - bit);
            bits[word] |= (u64::MAX >> (64 - n)) << bit;
            s += n;
        }
    }
    Some((base, bits))
}

/// Number of bytes covered by the union of half-open ranges `[start, end)`.
pub fn covered_bytes(ranges: &mut [(i64, i64)]) -> i64 {
    let mut n = 0;
    merge_each(ranges, |(s, e)| n += e - s);
    n
}

/// The byte ranges `[start, end)` merged where they overlap or touch,
/// sorted.
pub fn merged(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    sort_and_merge(&mut ranges);
    ranges
}

/// Replace `ranges` by the ranges of their union, sorted.
fn sort_and_merge(ranges: &mut Vec<(i64, i64)>) {
    let n = merge_sorted(ranges);
    ranges.truncate(n);
}

/// Replace `ranges` by the ranges of their union, sorted (ranges that
/// overlap or touch are one): what [`sectors_and_bytes`] counts is the
/// same, in a list no longer than the union's. Ranges within 4 KB are
/// marked in bits and read back as runs, not sorted.
pub fn merge_in_place(ranges: &mut Vec<(i64, i64)>) {
    if let Some((base, bits)) = near_bits(ranges) {
        ranges.clear();
        let end = NEAR_WORDS * 64;
        let (mut i, mut start) = (0, None);
        while i < end {
            // the bits of the word of bit `i` from `i` on, at the bottom
            let (w, left) = (bits[i / 64] >> (i % 64), 64 - i % 64);
            match start {
                None if w == 0 => i += left,
                None => {
                    i += w.trailing_zeros() as usize;
                    start = Some(i);
                }
                Some(s) => {
                    let ones = w.trailing_ones() as usize;
                    i += ones;
                    if ones < left {
                        ranges.push((base + s as i64, base + i as i64));
                        start = None;
                    }
                }
            }
        }
        ranges.extend(start.map(|s| (base + s as i64, base + end as i64)));
        return;
    }
    sort_and_merge(ranges);
}

/// Sort `ranges` and give each range of their union, in order (ranges
/// that overlap or touch are one).
fn merge_each(ranges: &mut [(i64, i64)], each: impl FnMut((i64, i64))) {
    let n = merge_sorted(ranges);
    ranges[..n].iter().copied().for_each(each);
}

/// Sort `ranges` and put the ranges of their union first, in order
/// (ranges that overlap or touch are one): how many there are.
fn merge_sorted(ranges: &mut [(i64, i64)]) -> usize {
    ranges.sort_unstable();
    let mut n = 0;
    for k in 0..ranges.len() {
        let (s, e) = ranges[k];
        if n > 0 && s <= ranges[n - 1].1 {
            ranges[n - 1].1 = ranges[n - 1].1.max(e);
        } else {
            ranges[n] = (s, e);
            n += 1;
        }
    }
    n
}

/// Sectors touched and sectors ideal (the same bytes, contiguous and
/// aligned) for one warp request: `(address, width)` of each active lane.
pub fn sectors(addrs: &[(i64, u32)]) -> (u32, u32) {
    if let Some(counts) = sectors_in_order(addrs) {
        return counts;
    }
    // (a warp's lanes of at most a sector each, at most two sectors per lane: on the
    // stack, as this runs for every access of every warp the analysis and the runs see)
    if addrs.len() <= WARP && addrs.iter().all(|&(_, w)| w as i64 <= SECTOR) {
        let (mut secs, mut bytes) = ([0i64; 2 * WARP], [(0i64, 0i64); WARP]);
        sectors_in(addrs, &mut secs, &mut bytes)
    } else {
        let spans: usize = addrs.iter().map(|&(_, w)| w as usize / SECTOR as usize + 2).sum();
        sectors_in(addrs, &mut vec![0; spans], &mut vec![(0, 0); addrs.len()])
    }
}

/// [`sectors`] of lanes of one width whose ranges come in address order,
/// each the one before or wholly after it (most warps' requests: a
/// contiguous or strided row, a broadcast), in one pass without sorting:
/// the lanes' sectors come in order, and the distinct bytes are the
/// distinct ranges'. `None` for any other request.
fn sectors_in_order(addrs: &[(i64, u32)]) -> Option<(u32, u32)> {
    let w = i64::from(addrs.first()?.1);
    if w == 0 {
        return None;
    }
    let (mut touched, mut ranges) = (0i64, 0i64);
    // the last lane's address, and the last sector counted
    let (mut prev, mut last_sector) = (None::<i64>, i64::MIN);
    for &(a, width) in addrs {
        if i64::from(width) != w {
            return None;
        }
        match prev {
            Some(p) if a == p => continue,
            Some(p) if a < p + w => return None,
            _ => {}
        }
        prev = Some(a);
        ranges += 1;
        let (first, last) = (a.div_euclid(SECTOR), (a + w - 1).div_euclid(SECTOR));
        // (the range starts after the last one ends: only its first sector can be counted already)
        touched += (last - first.max(last_sector.saturating_add(1)) + 1).max(0);
        last_sector = last;
    }
    Some((touched as u32, ((ranges * w + SECTOR - 1) / SECTOR) as u32))
}

/// [`sectors`] with room for the sectors (`secs`) and byte ranges
/// (`bytes`) of the lanes.
fn sectors_in(addrs: &[(i64, u32)], secs: &mut [i64], bytes: &mut [(i64, i64)]) -> (u32, u32) {
    let mut n = 0;
    for (k, &(a, w)) in addrs.iter().enumerate() {
        let end = a + w as i64;
        let mut s = a.div_euclid(SECTOR);
        while s * SECTOR < end {
            secs[n] = s;
            n += 1;
            s += 1;
        }
        bytes[k] = (a, end);
    }
    let secs = &mut secs[..n];
    secs.sort_unstable();
    let touched = secs.iter().enumerate().filter(|&(k, &s)| k == 0 || s != secs[k - 1]).count();
    // the distinct bytes: the ranges merged where they overlap or touch
    let mut distinct = 0;
    merge_each(&mut bytes[..addrs.len()], |(s, e)| distinct += e - s);
    (touched as u32, ((distinct + SECTOR - 1) / SECTOR) as u32)
}

/// Conflict degree of one warp request on 32 four-byte banks: the most
/// distinct words any bank must deliver (a word read by several lanes is
/// one broadcast); 8-byte accesses are served per half warp, 16-byte per
/// quarter warp.
pub fn conflict_degree(addrs: &[(i64, u32)], width: u32) -> u32 {
    let group = match width {
        8 => 16,
        16 => 8,
        _ => 32,
    };
    let mut worst = 0;
    let mut words: Vec<i64> = Vec::with_capacity(group * 4);
    for g in addrs.chunks(group) {
        // the distinct words the lanes of this part of the warp need, then per bank
        words.clear();
        for &(a, w) in g {
            let mut word = a.div_euclid(4);
            while word * 4 < a + w as i64 {
                words.push(word);
                word += 1;
            }
        }
        words.sort_unstable();
        words.dedup();
        let mut per_bank = [0u32; 32];
        for &w in &words {
            per_bank[w.rem_euclid(32) as usize] += 1;
        }
        worst = worst.max(per_bank.iter().copied().max().unwrap_or(0));
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_counting() {
        let lanes = |stride: i64, w: u32, base: i64| (0..32).map(|l| (base + l * stride, w)).collect::<Vec<_>>();
        assert_eq!(sectors(&lanes(4, 4, 0)), (4, 4));
        assert_eq!(sectors(&lanes(4, 4, 4)), (5, 4)); // x[i+1]
        assert_eq!(sectors(&lanes(128, 4, 0)), (32, 4));
        assert_eq!(sectors(&lanes(16, 4, 0)), (16, 4)); // AoS field
        assert_eq!(sectors(&lanes(8, 8, 0)), (8, 8)); // f64 contiguous
        assert_eq!(sectors(&lanes(0, 4, 0)), (1, 1)); // broadcast
    }

    /// The one-pass count agrees with the sorting one wherever it answers,
    /// and answers for rows, strides and broadcasts.
    #[test]
    fn sectors_in_order_agree_with_the_sort() {
        let sorted = |addrs: &[(i64, u32)]| {
            let (mut secs, mut bytes) = ([0i64; 2 * WARP], [(0i64, 0i64); WARP]);
            sectors_in(addrs, &mut secs, &mut bytes)
        };
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut answered = 0;
        for _ in 0..20_000 {
            let w = [1u32, 2, 4, 8, 16][next(5) as usize];
            let n = 1 + next(32) as usize;
            let mut a = next(200) as i64 - 100;
            let mut addrs = Vec::new();
            for _ in 0..n {
                addrs.push((a, if next(50) == 0 { 4 } else { w }));
                // equal, after, overlapping or (rarely) before
                a += match next(8) {
                    0 => 0,
                    1 => 1,
                    2 => -(next(40) as i64),
                    _ => i64::from(w) * next(5) as i64,
                };
            }
            if let Some(fast) = sectors_in_order(&addrs) {
                answered += 1;
                assert_eq!(fast, sorted(&addrs), "{addrs:?}");
            }
        }
        assert!(answered > 2_000, "{answered}");
        let lanes = |stride: i64, w: u32| (0..32).map(|l| (l * stride, w)).collect::<Vec<_>>();
        for (stride, w) in [(4, 4), (0, 4), (128, 4), (8, 8), (36, 4)] {
            assert_eq!(sectors_in_order(&lanes(stride, w)), Some(sorted(&lanes(stride, w))));
        }
    }

    /// Ranges merged in place count the sectors and bytes the ranges did,
    /// and are the union's: sorted, apart, each within the ranges.
    #[test]
    fn ranges_merged_in_place_count_what_they_did() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..5_000 {
            let n = next(120) as usize;
            let spread = [64, 4096, 1 << 16][next(3) as usize];
            let ranges: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    let s = next(spread) as i64 - 100;
                    (s, s + [1, 4, 8, 32, 128][next(5) as usize])
                })
                .collect();
            let mut m = ranges.clone();
            merge_in_place(&mut m);
            assert_eq!(sectors_and_bytes(&mut m.clone(), &mut Vec::new()), sectors_and_bytes(&mut ranges.clone(), &mut Vec::new()));
            assert_eq!(m, merged(ranges.clone()), "{ranges:?}");
            assert!(m.windows(2).all(|w| w[0].1 < w[1].0), "{m:?}");
        }
    }

    /// Sectors and bytes marked in bits agree with the distinct sectors and
    /// the union of the ranges counted by sorting, and give up on ranges
    /// spread over more than 4 KB.
    #[test]
    fn sectors_and_bytes_near_agree_with_the_sort() {
        let mut next = crate::xorshift(0x51ed_2701_a3c4_9b5f);
        let (mut answered, mut declined) = (0, 0);
        for _ in 0..20_000 {
            let n = 1 + next(96) as usize;
            let base = next(1 << 20) as i64 - (1 << 19);
            let spread = [64, 512, 4096, 6000][next(4) as usize];
            let ranges: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    let s = base + next(spread) as i64;
                    (s, s + [1, 2, 4, 8, 12, 16, 64, 100][next(8) as usize])
                })
                .collect();
            // the count by sorting: what the bits must give
            let sorted = (distinct_sectors(&ranges, &mut Vec::new()), covered_bytes(&mut ranges.clone()) as u32);
            assert_eq!(sectors_and_bytes(&mut ranges.clone(), &mut Vec::new()), sorted, "{ranges:?}");
            match sectors_and_bytes_near(&ranges) {
                Some(got) => {
                    answered += 1;
                    assert_eq!(got, sorted, "{ranges:?}");
                }
                None => {
                    declined += 1;
                    let (lo, hi) = (ranges.iter().map(|r| r.0).min().unwrap(), ranges.iter().map(|r| r.1).max().unwrap());
                    assert!(hi - lo.div_euclid(64) * 64 > 4096, "{ranges:?}");
                }
            }
        }
        assert!(answered > 10_000 && declined > 1_000, "{answered} {declined}");
        assert_eq!(sectors_and_bytes_near(&[]), None);
    }

    /// A request whose lanes are all at one address counts as its first
    /// lane alone: the sectors it touches and its bank-conflict degree are
    /// the distinct addresses' (the interpreter counts a whole-warp load
    /// through one address so: `interp::exec`'s `one_place`).
    #[test]
    fn one_place_counts_as_its_first_lane() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..5_000 {
            let w = [1u32, 2, 4, 8, 12, 16, 32, 64][next(8) as usize];
            let a = next(4096) as i64 - 2048;
            let n = 2 + next(31) as usize;
            let all = vec![(a, w); n];
            assert_eq!(sectors(&all), sectors(&all[..1]), "{a} {w} {n}");
            assert_eq!(conflict_degree(&all, w), conflict_degree(&all[..1], w), "{a} {w} {n}");
        }
    }

    #[test]
    fn bank_conflicts() {
        let lanes = |stride: i64, w: u32| (0..32).map(|l| (l * stride, w)).collect::<Vec<_>>();
        assert_eq!(conflict_degree(&lanes(4, 4), 4), 1);
        assert_eq!(conflict_degree(&lanes(128, 4), 4), 32); // column of a 32×32 tile
        assert_eq!(conflict_degree(&lanes(132, 4), 4), 1); // padded to 33 words
        assert_eq!(conflict_degree(&lanes(8, 4), 4), 2); // interleaved s=1
        assert_eq!(conflict_degree(&lanes(0, 4), 4), 1); // broadcast
        assert_eq!(conflict_degree(&lanes(8, 8), 8), 1); // f64 contiguous, per half warp
        assert_eq!(conflict_degree(&lanes(16, 16), 16), 1); // float4 contiguous, per quarter warp
    }

    #[test]
    fn shapes_are_clamped_to_a_launchable_block() {
        let s = Shape::new([4_294_967_295; 3], ShapeSource::Reqntid);
        assert_eq!(s.threads(), 1024);
        assert_eq!(Shape::new([0, 0, 0], ShapeSource::Assumed).threads(), 1);
        assert_eq!(Shape::new([16, 16, 1], ShapeSource::Cli).warps(), 8);
    }
}
