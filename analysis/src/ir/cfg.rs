//! Control-flow graph of one PTX function: basic blocks and their edges,
//! dominator and post-dominator trees (the latter over a virtual exit
//! node), reverse post-order and natural loops.
//!
//! Owns: block formation from the flat instruction list, and the graph
//! facts every analysis asks for (`dominates`, `ipdom`, loop membership).
//! Does not own: registers or values (see `ssa`).

use super::entity::{BlockId, IdVec, InstId, LoopId};
use super::inst::{Flow, Inst};
use rustc_hash::FxHashMap;

#[derive(Debug, Clone)]
pub struct Block {
    /// Instruction range `[start, end)`.
    pub start: InstId,
    pub end: InstId,
    pub succs: Vec<BlockId>,
    pub preds: Vec<BlockId>,
}

impl Block {
    /// The block's instructions, in order.
    pub fn insts(&self) -> impl DoubleEndedIterator<Item = InstId> + ExactSizeIterator {
        (self.start.index()..self.end.index()).map(InstId::new)
    }
    /// The last instruction (a block is never empty but in an empty function).
    pub fn last(&self) -> Option<InstId> {
        (self.end > self.start).then(|| InstId::new(self.end.index() - 1))
    }
}

#[derive(Debug, Clone)]
pub struct Loop {
    pub header: BlockId,
    /// Blocks of the loop, header included, sorted.
    pub blocks: Vec<BlockId>,
    /// Sources of back edges to the header.
    pub latches: Vec<BlockId>,
    /// Edges `(inside, outside)` leaving the loop.
    pub exits: Vec<(BlockId, BlockId)>,
    /// The enclosing loop.
    pub parent: Option<LoopId>,
}

/// The CFG. Edges live in the blocks (`succs`/`preds`); everything else
/// (dominator trees, orders, loops) is derived from them once, here, and
/// read through accessors.
pub struct Cfg {
    pub blocks: IdVec<BlockId, Block>,
    pub loops: IdVec<LoopId, Loop>,
    /// Reverse post-order of reachable blocks.
    pub rpo: Vec<BlockId>,
    /// Block of each instruction.
    block_of: IdVec<InstId, BlockId>,
    /// Immediate dominator of each block (`NONE`: the entry, and blocks
    /// it does not reach).
    dom: Vec<u32>,
    /// Immediate post-dominator of each block and of the virtual exit
    /// (index `blocks.len()`; `NONE` for the exit).
    pdom: Vec<u32>,
    /// Position of each block in `rpo` (`u32::MAX` if unreachable).
    rpo_index: IdVec<BlockId, u32>,
    /// Innermost loop of each block.
    loop_of: IdVec<BlockId, Option<LoopId>>,
    /// True when a retreating edge is not a back edge (irreducible CFG).
    irreducible: bool,
    /// Entry and exit times of a depth-first walk of the dominator tree
    /// (`u32::MAX`: unreachable): `a` dominates `b` when `b`'s interval
    /// lies in `a`'s.
    dom_in: IdVec<BlockId, u32>,
    dom_out: IdVec<BlockId, u32>,
    /// The loop each block heads.
    header_of: IdVec<BlockId, Option<LoopId>>,
}

impl Cfg {
    /// Build the CFG. `labels` maps label names to the index of the
    /// instruction they precede; `tables` maps `.branchtargets` labels to
    /// their target lists; `noreturn(i)` says a call never returns.
    pub fn build(
        insts: &IdVec<InstId, Inst<'_>>,
        labels: &rustc_hash::FxHashMap<&str, InstId>,
        tables: &FxHashMap<&str, Vec<&str>>,
        noreturn: impl Fn(&Inst<'_>) -> bool,
    ) -> Cfg {
        let n = insts.len();
        // leaders
        let mut leader = vec![false; n + 1];
        if n > 0 {
            leader[0] = true;
        }
        for &i in labels.values() {
            if i.index() <= n {
                leader[i.index()] = true;
            }
        }
        for (i, inst) in insts.iter().enumerate() {
            if inst.flow() != Flow::Next || noreturn(inst) {
                leader[i + 1] = true;
            }
        }
        let mut blocks: IdVec<BlockId, Block> = IdVec::new();
        let mut block_of: IdVec<InstId, BlockId> = IdVec::filled(n, BlockId::new(0));
        let mut s = 0;
        for (i, &lead) in leader.iter().enumerate().skip(1) {
            if lead || i == n {
                if i > s {
                    blocks.push(Block { start: InstId::new(s), end: InstId::new(i), succs: vec![], preds: vec![] });
                }
                s = i;
            }
        }
        if blocks.is_empty() {
            // an empty body still gets one (empty) block
            blocks.push(Block { start: InstId::new(0), end: InstId::new(0), succs: vec![], preds: vec![] });
        }
        let mut start_block = FxHashMap::default();
        for (b, blk) in blocks.iter_enumerated() {
            start_block.insert(blk.start, b);
            for i in blk.insts() {
                block_of[i] = b;
            }
        }
        let target = |l: &str| labels.get(l).and_then(|i| start_block.get(i)).copied();
        let nb = blocks.len();
        for blk in blocks.iter_mut() {
            let (st, en) = (blk.start, blk.end);
            let mut succs = Vec::new();
            let fall = if en.index() < n { start_block.get(&en).copied() } else { None };
            if en == st {
                blk.succs = succs;
                continue;
            }
            let last = &insts[InstId::new(en.index() - 1)];
            let guarded = last.ast.guard.is_some();
            match last.flow() {
                Flow::Next => {
                    if !noreturn(last) {
                        succs.extend(fall);
                    }
                }
                Flow::Branch(l) => {
                    succs.extend(target(l));
                    if guarded {
                        succs.extend(fall);
                    }
                }
                Flow::Indirect(t) => {
                    if let Some(ts) = tables.get(t) {
                        for l in ts {
                            succs.extend(target(l));
                        }
                    }
                    if guarded {
                        succs.extend(fall);
                    }
                }
                Flow::Exit => {
                    if guarded {
                        succs.extend(fall);
                    }
                }
            }
            let mut seen = Vec::new();
            succs.retain(|s| {
                if seen.contains(s) {
                    false
                } else {
                    seen.push(*s);
                    true
                }
            });
            blk.succs = succs;
        }
        let ids: Vec<BlockId> = blocks.keys().collect();
        for b in ids {
            for s in blocks[b].succs.clone() {
                blocks[s].preds.push(b);
            }
        }
        let Trees { rpo, dom, pdom } = dominator_trees(&blocks);
        let mut rpo_index: IdVec<BlockId, u32> = IdVec::filled(nb, u32::MAX);
        for (i, &b) in rpo.iter().enumerate() {
            rpo_index[b] = i as u32;
        }
        let (dom_in, dom_out) = dominator_intervals(&blocks, &dom, &rpo_index);
        let mut cfg = Cfg {
            blocks,
            block_of,
            dom,
            pdom,
            rpo,
            rpo_index,
            loops: IdVec::new(),
            loop_of: IdVec::filled(nb, None),
            irreducible: false,
            dom_in,
            dom_out,
            header_of: IdVec::filled(nb, None),
        };
        cfg.find_loops();
        for (l, lp) in cfg.loops.iter_enumerated() {
            cfg.header_of[lp.header] = Some(l);
        }
        cfg
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The block of instruction `i`.
    pub fn block_of(&self, i: InstId) -> BlockId {
        self.block_of[i]
    }

    pub fn reachable(&self, b: BlockId) -> bool {
        self.rpo_index[b] != u32::MAX
    }

    /// Position of a reachable block in reverse post-order.
    pub fn rpo_pos(&self, b: BlockId) -> Option<usize> {
        self.reachable(b).then_some(self.rpo_index[b] as usize)
    }

    /// The innermost loop holding `b`.
    pub fn loop_of(&self, b: BlockId) -> Option<LoopId> {
        self.loop_of[b]
    }

    /// A retreating edge is not a back edge: natural loops do not describe the CFG.
    pub fn is_irreducible(&self) -> bool {
        self.irreducible
    }

    /// Does block `a` dominate block `b`?
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        if !self.reachable(b) {
            return false;
        }
        self.reachable(a) && self.dom_in[a] <= self.dom_in[b] && self.dom_out[b] <= self.dom_out[a]
    }

    pub fn idom(&self, b: BlockId) -> Option<BlockId> {
        Some(self.dom[b.index()]).filter(|&d| d != NONE).map(|d| BlockId::new(d as usize))
    }

    /// Immediate post-dominator; `None` when it is the virtual exit.
    pub fn ipdom(&self, b: BlockId) -> Option<BlockId> {
        Some(self.pdom[b.index()] as usize).filter(|&i| i < self.blocks.len()).map(BlockId::new)
    }

    /// The loop whose header is `b`.
    pub fn loop_with_header(&self, b: BlockId) -> Option<LoopId> {
        self.header_of[b]
    }

    /// Does block `b` jump out of loop `l` (a successor outside it)?
    pub fn leaves(&self, b: BlockId, l: LoopId) -> bool {
        self.blocks[b].succs.iter().any(|&s| !self.in_loop(s, l))
    }

    /// Is `b` inside loop `l`?
    pub fn in_loop(&self, b: BlockId, l: LoopId) -> bool {
        self.loops[l].blocks.binary_search(&b).is_ok()
    }

    fn find_loops(&mut self) {
        let nb = self.blocks.len();
        let mut by_header: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
        for &b in &self.rpo {
            for &s in &self.blocks[b].succs {
                if self.rpo_index[s] <= self.rpo_index[b] {
                    if self.dominates(s, b) {
                        by_header.entry(s).or_default().push(b);
                    } else {
                        self.irreducible = true;
                    }
                }
            }
        }
        let mut headers: Vec<BlockId> = by_header.keys().copied().collect();
        headers.sort_by_key(|h| self.rpo_index[*h]);
        for h in headers {
            let latches = by_header.remove(&h).unwrap_or_default();
            let mut in_loop: IdVec<BlockId, bool> = IdVec::filled(nb, false);
            in_loop[h] = true;
            let mut stack: Vec<BlockId> = latches.clone();
            while let Some(x) = stack.pop() {
                if in_loop[x] {
                    continue;
                }
                in_loop[x] = true;
                for &p in &self.blocks[x].preds {
                    if !in_loop[p] && self.reachable(p) {
                        stack.push(p);
                    }
                }
            }
            let blocks: Vec<BlockId> = self.blocks.keys().filter(|&b| in_loop[b]).collect();
            let mut exits = Vec::new();
            for &b in &blocks {
                for &s in &self.blocks[b].succs {
                    if !in_loop[s] {
                        exits.push((b, s));
                    }
                }
            }
            self.loops.push(Loop { header: h, blocks, latches, exits, parent: None });
        }
        // nesting: visit loops from largest to smallest; a loop's parent is
        // the innermost loop seen so far that holds its header
        let mut order: Vec<LoopId> = self.loops.keys().collect();
        order.sort_by_key(|&l| std::cmp::Reverse(self.loops[l].blocks.len()));
        for l in order {
            self.loops[l].parent = self.loop_of[self.loops[l].header];
            for i in 0..self.loops[l].blocks.len() {
                let b = self.loops[l].blocks[i];
                self.loop_of[b] = Some(l);
            }
        }
    }

    /// Blocks reachable from `from` (around loops too) without passing
    /// `stop`, sorted (a [`BlockSet`] holds them).
    pub fn region(&self, from: &[BlockId], stop: Option<BlockId>) -> Vec<BlockId> {
        // the blocks seen, marked with this walk's stamp in a buffer kept per thread (a
        // function has a region per branch: clearing a block-sized table for each would
        // cost the function's size per branch)
        thread_local! {
            static SEEN: std::cell::RefCell<(Vec<u32>, u32)> = const { std::cell::RefCell::new((Vec::new(), 0)) };
        }
        SEEN.with(|cell| {
            let (seen, stamp) = &mut *cell.borrow_mut();
            *stamp = stamp.wrapping_add(1);
            if *stamp == 0 || seen.len() < self.len() {
                seen.clear();
                seen.resize(self.len().max(seen.capacity()), 0);
                *stamp = 1;
            }
            let mut stack: Vec<BlockId> = from.to_vec();
            let mut out = Vec::new();
            while let Some(x) = stack.pop() {
                if Some(x) == stop || seen[x.index()] == *stamp {
                    continue;
                }
                seen[x.index()] = *stamp;
                out.push(x);
                stack.extend(self.blocks[x].succs.iter().copied());
            }
            out.sort_unstable();
            out
        })
    }

    /// Loops containing `b`, innermost first.
    pub fn loops_containing(&self, b: BlockId) -> Vec<LoopId> {
        let mut v = Vec::new();
        let mut l = self.loop_of[b];
        while let Some(x) = l {
            v.push(x);
            l = self.loops[x].parent;
        }
        v
    }
}

/// Entry and exit times of an iterative depth-first walk of the
/// dominator tree from the entry (unreachable blocks: `u32::MAX`).
fn dominator_intervals(
    blocks: &IdVec<BlockId, Block>,
    dom: &[u32],
    rpo_index: &IdVec<BlockId, u32>,
) -> (IdVec<BlockId, u32>, IdVec<BlockId, u32>) {
    let nb = blocks.len();
    let (mut tin, mut tout) = (IdVec::filled(nb, u32::MAX), IdVec::filled(nb, u32::MAX));
    let mut children: IdVec<BlockId, Vec<BlockId>> = IdVec::filled(nb, Vec::new());
    let mut root = None;
    for b in blocks.keys().filter(|&b| rpo_index[b] != u32::MAX) {
        match dom[b.index()] {
            NONE => root = root.or(Some(b)),
            p => children[BlockId::new(p as usize)].push(b),
        }
    }
    let Some(root) = root else { return (tin, tout) };
    let mut clock = 0u32;
    let mut stack = vec![(root, 0usize)];
    tin[root] = clock;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        if let Some(&c) = children[b].get(*next) {
            *next += 1;
            clock += 1;
            tin[c] = clock;
            stack.push((c, 0));
        } else {
            clock += 1;
            tout[b] = clock;
            stack.pop();
        }
    }
    (tin, tout)
}

/// No node (an immediate dominator of none).
const NONE: u32 = u32::MAX;

/// The blocks' reverse post-order from the entry and their immediate
/// dominators and post-dominators.
struct Trees {
    rpo: Vec<BlockId>,
    dom: Vec<u32>,
    pdom: Vec<u32>,
}

/// The blocks' [`Trees`]. Post-dominance is over a virtual exit node
/// (index `blocks.len()`) that every block without successors goes to;
/// blocks that cannot reach an exit (endless loops) get an edge to it too.
fn dominator_trees(blocks: &IdVec<BlockId, Block>) -> Trees {
    let nb = blocks.len();
    let exit = nb as u32;
    // the blocks that reach an exit: backwards from the exits
    let mut reaches = vec![false; nb];
    let mut stack: Vec<BlockId> = blocks.iter_enumerated().filter(|(_, b)| b.succs.is_empty()).map(|(b, _)| b).collect();
    stack.iter().for_each(|b| reaches[b.index()] = true);
    while let Some(x) = stack.pop() {
        for &p in &blocks[x].preds {
            if !reaches[p.index()] {
                reaches[p.index()] = true;
                stack.push(p);
            }
        }
    }
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(nb * 2);
    for (b, blk) in blocks.iter_enumerated() {
        edges.extend(blk.succs.iter().map(|s| (b.index() as u32, s.index() as u32)));
        if blk.succs.is_empty() || !reaches[b.index()] {
            edges.push((b.index() as u32, exit));
        }
    }
    let forward = Adjacency::new(nb + 1, edges.iter().copied());
    let backward = Adjacency::new(nb + 1, edges.iter().map(|&(a, b)| (b, a)));
    let order = reverse_post_order(&forward, 0);
    let mut dom = immediate_dominators(&order, &backward);
    dom.truncate(nb);
    let pdom = immediate_dominators(&reverse_post_order(&backward, exit), &forward);
    // (the exit has no successors: leaving it out leaves the blocks' order as it was)
    let rpo = order.into_iter().filter(|&x| x != exit).map(|x| BlockId::new(x as usize)).collect();
    Trees { rpo, dom, pdom }
}

/// A graph's edges out of each node, in one list.
struct Adjacency {
    start: Vec<u32>,
    to: Vec<u32>,
}

impl Adjacency {
    fn new(n: usize, edges: impl Iterator<Item = (u32, u32)> + Clone) -> Adjacency {
        let mut start = vec![0u32; n + 1];
        edges.clone().for_each(|(a, _)| start[a as usize + 1] += 1);
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut to = vec![0u32; start[n] as usize];
        for (a, b) in edges {
            to[fill[a as usize] as usize] = b;
            fill[a as usize] += 1;
        }
        Adjacency { start, to }
    }

    fn of(&self, a: u32) -> &[u32] {
        &self.to[self.start[a as usize] as usize..self.start[a as usize + 1] as usize]
    }
}

/// The nodes `root` reaches in a graph (`succs`), in reverse post-order of
/// a depth-first walk that takes each node's successors in order.
fn reverse_post_order(succs: &Adjacency, root: u32) -> Vec<u32> {
    let n = succs.start.len() - 1;
    let mut seen = vec![false; n];
    let mut post: Vec<u32> = Vec::with_capacity(n);
    let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
    seen[root as usize] = true;
    while let Some(&mut (x, ref mut next)) = stack.last_mut() {
        match succs.of(x).get(*next) {
            Some(&s) => {
                *next += 1;
                if !seen[s as usize] {
                    seen[s as usize] = true;
                    stack.push((s, 0));
                }
            }
            None => {
                post.push(x);
                stack.pop();
            }
        }
    }
    post.reverse();
    post
}

/// The immediate dominator of every node of a graph (its reverse
/// post-order from the root, `post`, and each node's predecessors):
/// `NONE` for the root and for the nodes it does not reach. Cooper,
/// Harvey and Kennedy's iteration over reverse post-order ("A Simple,
/// Fast Dominance Algorithm").
fn immediate_dominators(post: &[u32], preds: &Adjacency) -> Vec<u32> {
    let n = preds.start.len() - 1;
    let Some(&root) = post.first() else { return vec![NONE; n] };
    // each node's place in the order
    let mut order = vec![NONE; n];
    for (i, &x) in post.iter().enumerate() {
        order[x as usize] = i as u32;
    }
    let mut idom = vec![NONE; n];
    idom[root as usize] = root;
    let intersect = |idom: &[u32], mut a: u32, mut b: u32| {
        while a != b {
            while order[a as usize] > order[b as usize] {
                a = idom[a as usize];
            }
            while order[b as usize] > order[a as usize] {
                b = idom[b as usize];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &x in &post[1..] {
            let mut new = NONE;
            for &p in preds.of(x) {
                if idom[p as usize] != NONE {
                    new = if new == NONE { p } else { intersect(&idom, p, new) };
                }
            }
            if idom[x as usize] != new {
                idom[x as usize] = new;
                changed = true;
            }
        }
    }
    idom[root as usize] = NONE;
    idom
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dominance by the tree's walk intervals is dominance by the chain of
    /// immediate dominators, for every pair of blocks, and the loop table
    /// names each loop's header.
    #[test]
    fn dominance_by_intervals_is_the_chain() {
        let src = crate::synth::module(2, 20);
        let m = crate::ptx::parse(&src).unwrap();
        for f in crate::ir::lower(&m) {
            let cfg = &f.cfg;
            assert!(!cfg.loops.is_empty());
            for a in cfg.blocks.keys() {
                for b in cfg.blocks.keys() {
                    let chain = cfg.reachable(b) && std::iter::successors(Some(b), |&x| cfg.idom(x)).any(|d| d == a);
                    assert_eq!(cfg.dominates(a, b), chain, "{a:?} dominates {b:?}");
                }
                let header = cfg.loops.iter_enumerated().find(|(_, l)| l.header == a).map(|(k, _)| k);
                assert_eq!(cfg.loop_with_header(a), header);
            }
        }
    }

    /// The nodes `root` reaches in a graph of `n` nodes without node `cut`.
    fn reached(n: usize, edges: &[(u32, u32)], root: u32, cut: Option<u32>) -> Vec<bool> {
        let mut seen = vec![false; n];
        let mut stack = vec![root];
        seen[root as usize] = Some(root) != cut;
        while let Some(x) = stack.pop().filter(|_| Some(root) != cut) {
            for &(a, b) in edges {
                if a == x && Some(b) != cut && !seen[b as usize] {
                    seen[b as usize] = true;
                    stack.push(b);
                }
            }
        }
        seen
    }

    /// Immediate dominators by their definition: `d` dominates `x` when
    /// removing `d` cuts `x` off the root; the immediate one is the strict
    /// dominator every other strict dominator of `x` dominates.
    fn idoms_by_definition(n: usize, edges: &[(u32, u32)], root: u32) -> Vec<u32> {
        let reach = reached(n, edges, root, None);
        let doms: Vec<Vec<bool>> =
            (0..n as u32).map(|d| reached(n, edges, root, Some(d)).iter().zip(&reach).map(|(c, r)| *r && !c).collect()).collect();
        (0..n)
            .map(|x| {
                if x == root as usize || !reach[x] {
                    return NONE;
                }
                let strict: Vec<usize> = (0..n).filter(|&d| d != x && doms[d][x]).collect();
                let closest = strict.iter().find(|&&d| strict.iter().all(|&e| doms[e][d]));
                closest.map_or(NONE, |&d| d as u32)
            })
            .collect()
    }

    /// The immediate dominators and post-dominators of random graphs (with
    /// unreachable nodes, endless loops and nodes with no successor) are
    /// those of the definition: post-dominance over a virtual exit that
    /// every block without successors, or that reaches none, goes to.
    #[test]
    fn dominator_trees_are_the_definitions() {
        let mut next = crate::xorshift(0x6a09_e667_f3bc_c908);
        for _ in 0..400 {
            let nb = 1 + next(14) as usize;
            let mut blocks: IdVec<BlockId, Block> = IdVec::new();
            for _ in 0..nb {
                blocks.push(Block { start: InstId::new(0), end: InstId::new(0), succs: vec![], preds: vec![] });
            }
            for b in 0..nb {
                for _ in 0..next(4) {
                    let s = BlockId::new(next(nb as u64) as usize);
                    if !blocks[BlockId::new(b)].succs.contains(&s) {
                        blocks[BlockId::new(b)].succs.push(s);
                        blocks[s].preds.push(BlockId::new(b));
                    }
                }
            }
            let Trees { dom, pdom, .. } = dominator_trees(&blocks);
            let edges: Vec<(u32, u32)> =
                blocks.iter_enumerated().flat_map(|(b, x)| x.succs.iter().map(move |s| (b.index() as u32, s.index() as u32))).collect();
            assert_eq!(dom, idoms_by_definition(nb, &edges, 0), "dominators of {edges:?}");
            // the graph with the exit, reversed
            let exit = nb as u32;
            let ends: Vec<u32> = (0..nb as u32).filter(|&b| blocks[BlockId::new(b as usize)].succs.is_empty()).collect();
            let reversed: Vec<(u32, u32)> = edges.iter().map(|&(a, b)| (b, a)).collect();
            let mut with_exit = edges.clone();
            for b in 0..nb as u32 {
                let reaches_end = ends.iter().any(|&e| reached(nb, &reversed, e, None)[b as usize]);
                if ends.contains(&b) || !reaches_end {
                    with_exit.push((b, exit));
                }
            }
            let back: Vec<(u32, u32)> = with_exit.iter().map(|&(a, b)| (b, a)).collect();
            assert_eq!(pdom, idoms_by_definition(nb + 1, &back, exit), "post-dominators of {edges:?}");
        }
    }
}

/// A set of blocks: the regions a branch decides, one per branch of what
/// may be a large function. Most hold a few blocks (a block-sized bit set
/// each would cost branches × blocks); a large one is a bit set (a list
/// of block ids would cost 32 bits a block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSet {
    /// Sorted.
    Few(Vec<BlockId>),
    Many(crate::ir::dataflow::BitSet, usize),
}

impl Default for BlockSet {
    fn default() -> Self {
        BlockSet::Few(Vec::new())
    }
}

impl BlockSet {
    /// The set of `blocks` (sorted, each once) of a function of `total` blocks.
    pub fn new(blocks: Vec<BlockId>, total: usize) -> BlockSet {
        if blocks.len() * 32 <= total {
            let mut v = blocks;
            v.shrink_to_fit();
            return BlockSet::Few(v);
        }
        let mut bits = crate::ir::dataflow::BitSet::new(total);
        blocks.iter().for_each(|b| bits.insert(b.index()));
        BlockSet::Many(bits, blocks.len())
    }

    pub fn contains(&self, b: BlockId) -> bool {
        match self {
            BlockSet::Few(v) => v.binary_search(&b).is_ok(),
            BlockSet::Many(bits, _) => bits.contains(b.index()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            BlockSet::Few(v) => v.len(),
            BlockSet::Many(_, n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The blocks, in order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = BlockId> + '_> {
        match self {
            BlockSet::Few(v) => Box::new(v.iter().copied()),
            BlockSet::Many(bits, _) => Box::new(bits.iter().map(BlockId::new)),
        }
    }
}
