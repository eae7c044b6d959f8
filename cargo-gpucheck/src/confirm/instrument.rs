//! PTX instrumentation for the CUDA engine (placeholder).
