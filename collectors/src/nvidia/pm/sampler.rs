//! The PM sampler loop (to come).
