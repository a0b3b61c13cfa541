//! The Boots section: each boot margin made (its levels, outcome, time to ready, trials)
//! and each cell's mean boot by boot, where its comparisons count boots.

/// The section's heading, as other sections name it.
pub(super) const HEADING: &str = "Boots";
