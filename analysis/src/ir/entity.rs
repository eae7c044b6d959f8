//! Typed ids for the IR's entities, cranelift style: blocks, instructions,
//! SSA values, phis and loops are `u32` newtypes, so that a block index
//! can never be used where an instruction index is meant; side tables are
//! [`IdVec`]s indexed by the id type.
//!
//! Owns: the id types, the indexed vector, [`IdLists`] (a list per id in
//! one vector) and [`Shared`] (equal tables kept once). Does not own: what the entities are (see `cfg`, `ssa`).

use std::marker::PhantomData;

/// An id type: a dense index.
pub trait EntityId: Copy + Eq + Ord + std::hash::Hash + std::fmt::Debug {
    fn new(index: usize) -> Self;
    fn index(self) -> usize;
}

/// A plain index is an id of its own kind (registers: `ssa::RegId`).
impl EntityId for u32 {
    #[inline]
    fn new(index: usize) -> Self {
        debug_assert!(index <= u32::MAX as usize);
        index as u32
    }
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
        pub struct $name(u32);

        impl EntityId for $name {
            #[inline]
            fn new(index: usize) -> Self {
                debug_assert!(index <= u32::MAX as usize);
                $name(index as u32)
            }
            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl $name {
            #[inline]
            pub fn new(index: usize) -> Self {
                <Self as EntityId>::new(index)
            }
            #[inline]
            pub fn index(self) -> usize {
                <Self as EntityId>::index(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

entity!(
    /// A basic block of a function's CFG.
    BlockId
);
entity!(
    /// An instruction of a function, by position in its body.
    InstId
);
entity!(
    /// An SSA value.
    ValueId
);
entity!(
    /// A phi node.
    PhiId
);
entity!(
    /// A natural loop.
    LoopId
);

/// A vector indexed by an id type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdVec<K, V> {
    items: Vec<V>,
    _k: PhantomData<K>,
}

impl<K, V> Default for IdVec<K, V> {
    fn default() -> Self {
        IdVec { items: Vec::new(), _k: PhantomData }
    }
}

impl<K: EntityId, V> IdVec<K, V> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_capacity(n: usize) -> Self {
        IdVec { items: Vec::with_capacity(n), _k: PhantomData }
    }
    /// `n` copies of `v`.
    pub fn filled(n: usize, v: V) -> Self
    where
        V: Clone,
    {
        IdVec { items: vec![v; n], _k: PhantomData }
    }
    pub fn from_vec(items: Vec<V>) -> Self {
        IdVec { items, _k: PhantomData }
    }
    /// Append `v`; its id.
    pub fn push(&mut self, v: V) -> K {
        self.items.push(v);
        K::new(self.items.len() - 1)
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.items.get_mut(k.index())
    }
    /// Every id, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + ExactSizeIterator + '_ {
        (0..self.items.len()).map(K::new)
    }
    pub fn iter(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, V> {
        self.items.iter_mut()
    }
    /// `(id, value)` pairs, in order.
    pub fn iter_enumerated(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + '_ {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }
    pub fn as_slice(&self) -> &[V] {
        &self.items
    }
    pub fn into_vec(self) -> Vec<V> {
        self.items
    }
    pub fn truncate(&mut self, n: usize) {
        self.items.truncate(n)
    }
}

impl<K: EntityId, V> std::ops::Index<K> for IdVec<K, V> {
    type Output = V;
    #[inline]
    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: EntityId, V> std::ops::IndexMut<K> for IdVec<K, V> {
    #[inline]
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
    }
}

impl<'a, K, V> IntoIterator for &'a IdVec<K, V> {
    type Item = &'a V;
    type IntoIter = std::slice::Iter<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<K, V> FromIterator<V> for IdVec<K, V> {
    fn from_iter<I: IntoIterator<Item = V>>(it: I) -> Self {
        IdVec { items: it.into_iter().collect(), _k: PhantomData }
    }
}

/// A list per id, all in one vector (compressed rows): for tables where
/// most ids have a few entries (a value's users, a register's defining
/// blocks), one allocation instead of one per id. Built from `(id, item)`
/// pairs; each id's items keep the pairs' order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdLists<K, V> {
    /// Where each id's items start in `items`; one more entry than ids.
    starts: Vec<u32>,
    items: Vec<V>,
    _k: PhantomData<K>,
}

impl<K: EntityId, V: Copy> IdLists<K, V> {
    /// The lists of ids `0..n` from `pairs` (ids below `n`), in the pairs'
    /// order per id (a counting sort).
    pub fn from_pairs(n: usize, pairs: &[(K, V)]) -> Self {
        let mut starts = vec![0u32; n + 1];
        for (k, _) in pairs {
            starts[k.index() + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        // where each pair goes, then the items in that order
        let mut next = starts.clone();
        let mut order = vec![0u32; pairs.len()];
        for (i, (k, _)) in pairs.iter().enumerate() {
            let at = &mut next[k.index()];
            order[*at as usize] = i as u32;
            *at += 1;
        }
        let items = order.iter().map(|&i| pairs[i as usize].1).collect();
        IdLists { starts, items, _k: PhantomData }
    }

    /// How many ids there are lists for.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: EntityId, V> std::ops::Index<K> for IdLists<K, V> {
    type Output = [V];
    #[inline]
    fn index(&self, k: K) -> &[V] {
        &self.items[self.starts[k.index()] as usize..self.starts[k.index() + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_index_their_own_tables() {
        let mut blocks: IdVec<BlockId, &str> = IdVec::new();
        let a = blocks.push("entry");
        let b = blocks.push("exit");
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(blocks[b], "exit");
        assert_eq!(blocks.keys().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(blocks.iter_enumerated().map(|(k, v)| (k.index(), *v)).collect::<Vec<_>>(), vec![(0, "entry"), (1, "exit")]);
        let side: IdVec<BlockId, bool> = IdVec::filled(blocks.len(), false);
        assert!(!side[a]);
    }

    /// Equal tables are one allocation; tables whose digests meet (two
    /// elements between the sampled ones swapped: the same sums) are not.
    #[test]
    fn shared_tables_are_equal_ones() {
        use std::rc::Rc;
        let mut kept: Shared<Rc<Vec<i64>>> = Shared::default();
        let a: Vec<i64> = (0..64).map(|t| 4 * t).collect();
        let first = kept.share(Rc::new(a.clone()));
        assert!(Rc::ptr_eq(&first, &kept.share(Rc::new(a.clone()))));
        let mut swapped = a.clone();
        swapped.swap(1, 2);
        assert_eq!(digest(&swapped), digest(&a));
        let other = kept.share(Rc::new(swapped.clone()));
        assert!(!Rc::ptr_eq(&first, &other) && *other == swapped);
        assert!(Rc::ptr_eq(&other, &kept.share(Rc::new(swapped))));
        assert!(Rc::ptr_eq(&first, &kept.share(Rc::new(a.clone()))));
        let mut moved = a.clone();
        moved[3] += 1;
        assert_ne!(digest(&moved), digest(&a));
        let pairs: Rc<[(i64, usize)]> = a.iter().enumerate().map(|(t, &x)| (x, t)).collect();
        let mut lists: Shared<Rc<[(i64, usize)]>> = Shared::default();
        let p = lists.share(pairs.clone());
        assert!(Rc::ptr_eq(&p, &lists.share(pairs.iter().copied().collect())));
        // a table forgotten is no longer given for an equal one; an equal one not kept
        // forgets nothing
        let ways: Rc<[Option<bool>]> = (0..64).map(|t| (t % 3 != 0).then_some(t % 2 == 0)).collect();
        let mut directions: Shared<Rc<[Option<bool>]>> = Shared::default();
        let kept = directions.share(ways.clone());
        let equal: Rc<[Option<bool>]> = ways.iter().copied().collect();
        directions.forget(&equal);
        assert!(Rc::ptr_eq(&kept, &directions.share(equal.clone())));
        directions.forget(&kept);
        assert!(directions.is_empty());
        assert!(Rc::ptr_eq(&equal, &directions.share(equal.clone())));
    }

    #[test]
    fn lists_keep_each_ids_items_in_order() {
        let b = BlockId::new;
        let lists: IdLists<BlockId, u32> = IdLists::from_pairs(4, &[(b(2), 7), (b(0), 1), (b(2), 3), (b(0), 9), (b(2), 5)]);
        assert_eq!(lists.len(), 4);
        assert_eq!((&lists[b(0)], &lists[b(1)], &lists[b(2)], &lists[b(3)]), (&[1, 9][..], &[][..], &[7, 3, 5][..], &[][..]));
        let none: IdLists<BlockId, u32> = IdLists::from_pairs(0, &[]);
        assert!(none.is_empty());
    }
}

/// Equal values kept once: per-thread tables that thousands of values or
/// accesses of one function have in common (`t & 4`, the offsets of an
/// unrolled loop's accesses from their first thread's) share one
/// allocation. `P` is a shared pointer (`Rc`, `Arc`) to a table of
/// [`Cell`]s, found by its [`digest`] (tables of a block's threads are
/// long: hashing every element as a map's key would cost as much as
/// computing them, and again whenever the map grows).
#[derive(Debug)]
pub struct Shared<P>(rustc_hash::FxHashMap<u64, Vec<P>>);

impl<P> Default for Shared<P> {
    fn default() -> Self {
        Shared(Default::default())
    }
}

impl<P: Clone + std::ops::Deref> Shared<P> {
    /// The value kept equal to `p`, kept now if there was none.
    pub fn share<T: Cell>(&mut self, p: P) -> P
    where
        P::Target: AsRef<[T]>,
    {
        let kept = self.0.entry(digest(p.as_ref())).or_default();
        if let Some(x) = kept.iter().find(|x| (***x).as_ref() == (*p).as_ref()) {
            return x.clone();
        }
        kept.push(p.clone());
        p
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.0.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Stop keeping `p` itself (not another value equal to it).
    pub fn forget<T: Cell>(&mut self, p: &P)
    where
        P::Target: AsRef<[T]>,
    {
        let d = digest((**p).as_ref());
        if let Some(kept) = self.0.get_mut(&d) {
            kept.retain(|x| !std::ptr::eq(&**x, &**p));
            if kept.is_empty() {
                self.0.remove(&d);
            }
        }
    }

    /// Keep only the values `keep` says are still wanted.
    pub fn retain(&mut self, keep: impl Fn(&P) -> bool) {
        self.0.retain(|_, kept| {
            kept.retain(&keep);
            !kept.is_empty()
        });
    }
}

/// An element of a [`Shared`] table: its bits for the digest.
pub trait Cell: Copy + PartialEq {
    fn bits(self) -> u64;
}

impl Cell for i64 {
    fn bits(self) -> u64 {
        self as u64
    }
}

/// (Whether a thread takes a branch.)
impl Cell for bool {
    fn bits(self) -> u64 {
        self as u64
    }
}

/// (Whether a thread takes a branch, where that is known.)
impl Cell for Option<bool> {
    fn bits(self) -> u64 {
        self.map_or(2, |b| b as u64)
    }
}

/// (An address and the thread at it.)
impl Cell for (i64, usize) {
    fn bits(self) -> u64 {
        self.0 as u64 ^ (self.1 as u64).rotate_left(32)
    }
}

/// A table's digest: its length, the sum and the exclusive or of every
/// element (loops the compiler does several elements at a time), and
/// sixteen elements spread over it, hashed. Equal tables have equal
/// digests; [`Shared`] compares the tables whose digests meet.
pub fn digest<T: Cell>(xs: &[T]) -> u64 {
    use std::hash::Hasher;
    let (sum, xor) = xs.iter().fold((0u64, 0u64), |(s, x), c| {
        let b = c.bits();
        (s.wrapping_add(b), x ^ b)
    });
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(xs.len());
    h.write_u64(sum);
    h.write_u64(xor);
    for c in xs.iter().step_by((xs.len() / 16).max(1)) {
        h.write_u64(c.bits());
    }
    h.finish()
}
