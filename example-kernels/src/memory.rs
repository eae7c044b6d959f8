//! Memory access lints: `uncoalesced_global_access`, `shared_bank_conflict`
//! (and, with `-W gpucheck::pedantic`, `data_dependent_access`,
//! `shared_memory_opportunity` and `misaligned_global_access`), in good and
//! bad twins.
use crate::gpu::*;
use core::arch::nvptx::{_block_idx_x, _block_idx_y, _syncthreads};

/// Bad: each lane reads 32 elements after the previous lane.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn strided_gather(a: *const f32, out: *mut f32) {
    let t = gid();
    *out.add(t) = *a.add(t * 32); //~ WARN uncoalesced_global_access
}

/// Good twin: consecutive lanes, consecutive elements.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn contiguous_read(a: *const f32, out: *mut f32) {
    let t = gid();
    *out.add(t) = *a.add(t);
}

/// saxpy, the classic: `y = a·x + y`, coalesced, with a bounds check.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn saxpy(a: f32, x: *const f32, y: *mut f32, n: usize) {
    let i = gid();
    if i < n {
        *y.add(i) = a * *x.add(i) + *y.add(i);
    }
}

#[repr(C)]
pub struct Particle {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

/// Bad: an array of structs read one field at a time (lanes 16 bytes apart).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn aos_field_read(p: *const Particle, out: *mut f32) {
    let i = gid();
    *out.add(i) = (*p.add(i)).x; //~ WARN uncoalesced_global_access
}

/// A body of seven floats (28 bytes).
#[repr(C)]
pub struct Body {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub vx: f32,
    pub vy: f32,
    pub vz: f32,
    pub m: f32,
}

/// Bad: three of the seven fields of each body read in one loop: the warp
/// moves 28 bytes per lane to use 12; one diagnostic names the fields.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn aos_norms(p: *const Body, out: *mut f32, n: usize) {
    let mut i = gid();
    let mut acc = 0.0f32;
    while i < n {
        let q = p.add(i);
        acc += (*q).vx * (*q).vx + (*q).vy * (*q).vy + (*q).vz * (*q).vz; //~ WARN uncoalesced_global_access
        i += grid_stride();
    }
    *out.add(gid()) = acc;
}

/// An 18-byte block of a quantised format: a scale and 16 bytes.
#[repr(C, packed)]
pub struct Block18 {
    pub scale: u16,
    pub q: [u8; 16],
}

/// Good: each thread reads its own 18-byte block field by field; each load
/// alone touches many sectors, but together the warp's loads use every
/// byte of the sectors they touch, and L1 serves the repeats.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn packed_blocks(b: *const Block18, out: *mut f32) {
    let i = gid();
    let blk = b.add(i);
    let scale = (*blk).scale as f32;
    let mut acc = 0u32;
    let mut k = 0;
    while k < 16 {
        acc += (*blk).q[k] as u32;
        k += 1;
    }
    *out.add(i) = scale * acc as f32;
}

/// Good (pedantic hint): `x[2i]` and `x[2i+1]` together read every byte of
/// their sectors; one 8-byte access would do both.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn pair_sum(x: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *x.add(2 * i) + *x.add(2 * i + 1); //~ WARN vectorizable_access
}

/// Bad twin: `x[2i]` alone reads every other float.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn even_only(x: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *x.add(2 * i); //~ WARN uncoalesced_global_access
}

/// Bad: each thread writes 8 consecutive outputs, so the lanes of a store
/// are 32 bytes apart and every store request touches 8× the sectors it
/// needs (stores are not merged in L1).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn eight_per_thread(x: *const f32, out: *mut f32) {
    let i = gid();
    let v = *x.add(i);
    let mut l = 0;
    while l < 8 {
        *out.add(8 * i + l) = v + l as f32; //~ WARN uncoalesced_global_access
        l += 1;
    }
}

/// Good twin: the same outputs, neighbouring lanes writing neighbouring ones.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn eight_per_warp(x: *const f32, out: *mut f32) {
    let i = gid();
    let v = *x.add(i);
    let (w, lane) = (i / 32, i % 32);
    let mut l = 0;
    while l < 8 {
        *out.add(w * 256 + l * 32 + lane) = v + l as f32;
        l += 1;
    }
}

/// Good twin: a structure of arrays.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn soa_field_read(xs: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *xs.add(i);
}

/// Good: 8-byte elements, contiguous (8 sectors for 256 bytes is ideal).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn copy_f64(a: *const f64, out: *mut f64) {
    let i = gid();
    *out.add(i) = *a.add(i);
}

/// Good at the default threshold: `x[i + 1]` touches 5 sectors for 4.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shifted_read(a: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *a.add(i + 1);
}

/// Bad: the naive transpose writes a column (32×8 blocks, 32×32 tiles).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn transpose_naive(input: *const f32, output: *mut f32, width: usize, height: usize) {
    let x = _block_idx_x() as usize * 32 + tid();
    let y = _block_idx_y() as usize * 32 + tid_y();
    let mut j = 0;
    while j < 32 {
        *output.add(x * height + y + j) = *input.add((y + j) * width + x); //~ WARN uncoalesced_global_access //~ WARN misaligned_global_access
        j += 8;
    }
}

/// Good twin: through a padded shared tile, both global accesses are rows.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn transpose_tiled(input: *const f32, output: *mut f32, width: usize, height: usize) {
    let tile = tile_33();
    let (tx, ty) = (tid(), tid_y());
    let (bx, by) = (_block_idx_x() as usize * 32, _block_idx_y() as usize * 32);
    let mut j = 0;
    while j < 32 {
        *tile.add((ty + j) * 33 + tx) = *input.add((by + ty + j) * width + bx + tx); //~ WARN misaligned_global_access
        j += 8;
    }
    _syncthreads();
    let mut j = 0;
    while j < 32 {
        *output.add((bx + ty + j) * height + by + tx) = *tile.add(tx * 33 + ty + j); //~ WARN misaligned_global_access
        j += 8;
    }
}

/// Pedantic: rows of a runtime `width` start on a 32-byte sector only when
/// `width` is a multiple of 8 floats; otherwise each warp's row touches 5
/// sectors instead of 4 (32×8 blocks).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale_rows(a: *const f32, out: *mut f32, width: usize) {
    let (x, y) = (_block_idx_x() as usize * 32 + tid(), _block_idx_y() as usize * 8 + tid_y());
    *out.add(y * width + x) = *a.add(y * width + x) * 2.0; //~ WARN misaligned_global_access //~ WARN misaligned_global_access
}

/// Good twin: the row pitch is padded to a multiple of 8 floats.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale_rows_padded(a: *const f32, out: *mut f32, width: usize) {
    let pitch = (width + 7) & !7;
    let (x, y) = (_block_idx_x() as usize * 32 + tid(), _block_idx_y() as usize * 8 + tid_y());
    *out.add(y * pitch + x) = *a.add(y * pitch + x) * 2.0;
}

/// Bad: a column of an unpadded 32×32 shared tile: all lanes in one bank.
/// The 32×8 block stages the whole tile, four rows per thread.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shared_column_unpadded(input: *const f32, out: *mut f32) {
    let tile = smem_a() as *mut f32;
    let (tx, ty) = (tid(), tid_y());
    for j in 0..4 {
        *tile.add((ty + 8 * j) * 32 + tx) = *input.add((ty + 8 * j) * 32 + tx);
    }
    _syncthreads();
    *out.add(ty * 32 + tx) = *tile.add(tx * 32 + ty); //~ WARN shared_bank_conflict
}

/// Good twin: rows padded to 33 words.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shared_column_padded(input: *const f32, out: *mut f32) {
    let tile = tile_33();
    let (tx, ty) = (tid(), tid_y());
    for j in 0..4 {
        *tile.add((ty + 8 * j) * 33 + tx) = *input.add((ty + 8 * j) * 32 + tx);
    }
    _syncthreads();
    *out.add(ty * 32 + tx) = *tile.add(tx * 33 + ty);
}

/// Bad: interleaved addressing; at stride 1 lanes are 8 bytes apart (2-way).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_interleaved(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    _syncthreads();
    let mut stride = 1;
    while stride < block_dim() {
        let i = 2 * stride * t;
        if i < block_dim() {
            *s.add(i) += *s.add(i + stride); //~ WARN shared_bank_conflict //~ WARN shared_bank_conflict
        }
        _syncthreads();
        stride *= 2;
    }
    if t == 0 {
        *out.add(_block_idx_x() as usize) = *s;
    }
}

/// Good twin: sequential addressing, conflict-free.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_sequential(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    _syncthreads();
    let mut half = block_dim() / 2;
    while half > 0 {
        if t < half {
            *s.add(t) += *s.add(t + half);
        }
        _syncthreads();
        half /= 2;
    }
    if t == 0 {
        *out.add(_block_idx_x() as usize) = *s;
    }
}

/// Bad: the up-sweep of a Blelloch scan over 512 elements. rustc unrolls
/// its 9 steps, each a copy of one line with its own stride (2 words to
/// 512) and fewer active lanes: from 2-way bank conflicts to 16-way (256
/// threads). The finding is the worst copy's (16-way), its note gives the
/// range of the others.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_upsweep(input: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    let (input, out) = (input.add(512 * _block_idx_x() as usize), out.add(512 * _block_idx_x() as usize));
    *s.add(t) = *input.add(t);
    *s.add(t + 256) = *input.add(t + 256);
    let mut offset = 1;
    let mut d = 256;
    while d > 0 {
        _syncthreads();
        if t < d {
            let (ai, bi) = (offset * (2 * t + 1) - 1, offset * (2 * t + 2) - 1);
            *s.add(bi) += *s.add(ai); //~ WARN shared_bank_conflict //~ WARN shared_bank_conflict
        }
        offset *= 2;
        d /= 2;
    }
    _syncthreads();
    *out.add(t) = *s.add(t);
    *out.add(t + 256) = *s.add(t + 256);
}

/// Good twin: one word of padding every 32 (`i + i / 32`) puts the lanes of
/// every copy in different banks.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_upsweep_padded(input: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let pad = |i: usize| i + i / 32;
    let t = tid();
    let (input, out) = (input.add(512 * _block_idx_x() as usize), out.add(512 * _block_idx_x() as usize));
    *s.add(pad(t)) = *input.add(t);
    *s.add(pad(t + 256)) = *input.add(t + 256);
    let mut offset = 1;
    let mut d = 256;
    while d > 0 {
        _syncthreads();
        if t < d {
            let (ai, bi) = (offset * (2 * t + 1) - 1, offset * (2 * t + 2) - 1);
            *s.add(pad(bi)) += *s.add(pad(ai));
        }
        offset *= 2;
        d /= 2;
    }
    _syncthreads();
    *out.add(t) = *s.add(pad(t));
    *out.add(t + 256) = *s.add(pad(t + 256));
}

/// GPUDrano's Fan2 (Rodinia gaussian, seed 000 Fig. 2a): each thread owns a
/// row, so lanes are `n` elements apart in `a` and `m`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fan2(m: *const f32, a: *mut f32, b: *mut f32, n: usize, t: usize) {
    let tid = gid();
    if tid + t + 1 >= n {
        return;
    }
    let x = tid + t + 1;
    let mut y = t;
    while y < n {
        *a.add(n * x + y) -= *m.add(n * x + t) * *a.add(n * t + y); //~ WARN uncoalesced_global_access //~ WARN uncoalesced_global_access //~ WARN vectorizable_access //~ WARN vectorizable_access
        y += 1;
    }
    *b.add(x) -= *m.add(n * x + t) * *b.add(t); //~ WARN uncoalesced_global_access
}

/// Fan2 fixed (seed 000 Fig. 2b): each thread owns a column.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fan2_fixed(m: *const f32, a: *mut f32, n: usize, t: usize) {
    let tid = gid();
    if tid + t >= n {
        return;
    }
    let y = tid + t;
    let mut x = t + 1;
    while x < n {
        *a.add(n * x + y) -= *m.add(n * x + t) * *a.add(n * t + y); //~ WARN misaligned_global_access //~ WARN misaligned_global_access
        x += 1;
    }
}

/// Pedantic: a gather through loaded indices.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gather(idx: *const u32, a: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *a.add(*idx.add(i) as usize); //~ WARN data_dependent_access
}

/// Pedantic: a 3-point stencil reads every element three times per block.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stencil3(a: *const f32, out: *mut f32) {
    let i = gid() + 1;
    *out.add(i) = *a.add(i - 1) + *a.add(i) + *a.add(i + 1); //~ WARN shared_memory_opportunity
}

/// A struct of pointers passed by value, a common way to pass many arrays;
/// `confirm` fills it by field (`p = { src = "f32[2048]", … }`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Strided {
    pub src: *const f32,
    pub dst: *mut f32,
    pub n: usize,
}

/// Bad: every lane reads 8 bytes after the previous one, through a struct.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gather_struct(p: Strided) {
    let i = gid();
    if i < p.n {
        *p.dst.add(i) = *p.src.add(2 * i); //~ WARN uncoalesced_global_access
    }
}

/// Pedantic: a copy of a 2-D view through a strides array, with the
/// division and modulo of generic tensor kernels: neighbouring lanes are
/// `strides[1]` elements apart, a value read from memory, so the cost is
/// said for 1 and for large, not built on a sample.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn copy_view_strided(x: *const f32, strides: *const usize, out: *mut f32, n: usize) {
    // (no panic path for `% 0`: a module with one does not load on a GPU)
    if n == 0 {
        return;
    }
    let i = gid();
    *out.add(i) = *x.add((i % n) * *strides.add(1) + (i / n) * *strides); //~ WARN stride_dependent_access //~ WARN vectorizable_access
}

/// Good twin: the contiguous view.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn copy_view_contiguous(x: *const f32, out: *mut f32) {
    let i = gid();
    *out.add(i) = *x.add(i);
}

/// Pedantic: thread `i` reduces row `i` of a tensor whose row stride is
/// read from a strides array: neighbouring lanes are `strides[0]` elements
/// apart, cheap only when that is 1.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_rows_strided(x: *const f32, strides: *const usize, out: *mut f32, len: usize) {
    let i = gid();
    let s = *strides;
    let mut acc = 0.0f32;
    let mut k = 0;
    while k < len {
        acc += *x.add(i * s + k); //~ WARN stride_dependent_access
        k += 1;
    }
    *out.add(i) = acc;
}

/// Good twin: neighbouring lanes read neighbouring elements; the loop
/// walks the strided dimension.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_cols_strided(x: *const f32, strides: *const usize, out: *mut f32, len: usize) {
    let i = gid();
    let s = *strides;
    let mut acc = 0.0f32;
    let mut k = 0;
    while k < len {
        acc += *x.add(k * s + i); //~ WARN misaligned_global_access
        k += 1;
    }
    *out.add(i) = acc;
}

/// A helper the compiler keeps as a call: analysed in each call context,
/// with the caller's thread index (`i`) and pointer.
#[inline(never)]
unsafe fn load_row_start(p: *const f32, i: usize) -> f32 {
    *p.add(i * 64) //~ WARN uncoalesced_global_access
}

/// Bad: through the helper, neighbouring lanes read 64 elements apart.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn helper_strided(a: *const f32, out: *mut f32) {
    let t = gid();
    *out.add(t) = load_row_start(a, t);
}

/// A helper that reads `p[i]`: coalesced when `i` is the thread index.
#[inline(never)]
unsafe fn load_at(p: *const f32, i: usize) -> f32 {
    *p.add(i)
}

/// Good twin: the helper called with consecutive indices.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn helper_contiguous(a: *const f32, out: *mut f32) {
    let t = gid();
    *out.add(t) = load_at(a, t);
}
