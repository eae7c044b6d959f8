//! One fixed-point engine for every dataflow problem of the crate, in the
//! spirit of rustc's `rustc_mir_dataflow`: a problem states its nodes (SSA
//! values, blocks, loops, functions — whatever its facts attach to), the
//! value of a node computed from the current state (its transfer
//! function), how two values join, an optional widening, and which nodes
//! to revisit when a node's value changes. The engine iterates a worklist
//! in a given priority order (reverse post-order for forward problems,
//! post-order for backward ones) until nothing changes.
//!
//! Termination is the problem's to guarantee: its join must climb a
//! lattice of finite height (or its widening must make it so). There is no
//! pass cap: the result is the least fixed point above the initial state.
//!
//! Owns: the iteration. Does not own: any domain (address spaces in
//! `space`, liveness in `ssa`, divergence in `crate::divergence`, call
//! summaries in `crate::divergence::Summaries`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A monotone dataflow problem over nodes `0..n`.
pub trait Problem {
    type Value: Clone + PartialEq;
    /// The node's value computed from the current state of all nodes.
    fn transfer(&mut self, node: usize, state: &[Self::Value]) -> Self::Value;
    /// Least upper bound.
    fn join(&self, a: &Self::Value, b: &Self::Value) -> Self::Value;
    /// Applied to `join(old, transfer)` before it is stored (widening at
    /// loop headers, normalisation); the identity by default.
    fn widen(&self, _node: usize, _old: &Self::Value, joined: Self::Value) -> Self::Value {
        joined
    }
    /// Nodes whose transfer reads `node`: pushed onto the worklist when
    /// `node` changes (may be computed on demand, may record facts).
    fn dependents(&mut self, node: usize, state: &[Self::Value], out: &mut Vec<usize>);
}

/// Iterate `p` to its fixed point from `init` (one value per node, usually
/// bottom). `order` lists the nodes by priority (first = most urgent);
/// nodes not listed start off the worklist and are only visited when a
/// listed node reaches them.
pub fn solve<P: Problem>(p: &mut P, init: Vec<P::Value>, order: &[usize]) -> Vec<P::Value> {
    let n = init.len();
    let mut state = init;
    // priority of each node: its position in `order`, unlisted ones after
    let mut prio = vec![u32::MAX; n];
    for (k, &x) in order.iter().enumerate() {
        if x < n && prio[x] == u32::MAX {
            prio[x] = k as u32;
        }
    }
    for (next, p) in (order.len() as u32..).zip(prio.iter_mut().filter(|p| **p == u32::MAX)) {
        *p = next;
    }
    let mut queued = vec![false; n];
    let mut heap: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::with_capacity(order.len());
    for &x in order {
        if x < n && !queued[x] {
            queued[x] = true;
            heap.push(Reverse((prio[x], x as u32)));
        }
    }
    let mut deps = Vec::new();
    while let Some(Reverse((_, x))) = heap.pop() {
        let x = x as usize;
        queued[x] = false;
        let t = p.transfer(x, &state);
        let joined = p.join(&state[x], &t);
        let new = p.widen(x, &state[x], joined);
        if new == state[x] {
            continue;
        }
        state[x] = new;
        deps.clear();
        p.dependents(x, &state, &mut deps);
        for &d in &deps {
            if d < n && !queued[d] {
                queued[d] = true;
                heap.push(Reverse((prio[d], d as u32)));
            }
        }
    }
    state
}

/// A fixed-size bit set (the domain of liveness-like problems).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub fn new(bits: usize) -> BitSet {
        BitSet { words: vec![0; bits.div_ceil(64).max(1)] }
    }
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    pub fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
    pub fn contains(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    /// Number of members.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(k * 64 + b)
            })
        })
    }
    pub fn union_with(&mut self, o: &BitSet) {
        for (a, b) in self.words.iter_mut().zip(&o.words) {
            *a |= b;
        }
    }
    pub fn subtract(&mut self, o: &BitSet) {
        for (a, b) in self.words.iter_mut().zip(&o.words) {
            *a &= !b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reachability on a cycle: the engine follows dependents until stable.
    struct Reach {
        succs: Vec<Vec<usize>>,
        preds: Vec<Vec<usize>>,
    }

    impl Problem for Reach {
        type Value = bool;
        fn transfer(&mut self, node: usize, state: &[bool]) -> bool {
            node == 0 || self.preds[node].iter().any(|&p| state[p])
        }
        fn join(&self, a: &bool, b: &bool) -> bool {
            *a || *b
        }
        fn dependents(&mut self, node: usize, _: &[bool], out: &mut Vec<usize>) {
            out.extend(&self.succs[node]);
        }
    }

    #[test]
    fn iterates_to_the_fixed_point() {
        // 0 → 1 → 2 → 1, 3 unreachable; listed in the worst order
        let succs = vec![vec![1], vec![2], vec![1], vec![]];
        let mut preds = vec![vec![]; 4];
        for (a, ss) in succs.iter().enumerate() {
            for &b in ss {
                preds[b].push(a);
            }
        }
        let mut p = Reach { succs, preds };
        let r = solve(&mut p, vec![false; 4], &[3, 2, 1, 0]);
        assert_eq!(r, vec![true, true, true, false]);
    }

    #[test]
    fn bit_sets() {
        let mut a = BitSet::new(130);
        a.insert(3);
        a.insert(129);
        let mut b = BitSet::new(130);
        b.insert(3);
        let mut c = a.clone();
        c.subtract(&b);
        assert!(!c.contains(3) && c.contains(129));
        b.union_with(&a);
        assert!(b.contains(129));
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![3, 129]);
        assert_eq!(b.count(), 2);
    }
}
