//! Unit vectors (pure): normalising and the dot product, which is the cosine of unit vectors.

/// Scales `v` to unit length in place (leaves an all-zero vector alone).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Whether a vector read from disk can be used: every component finite and its length 1 within
/// 1e-3 (every embedder convdex runs normalises its vectors). A vector that is not was damaged
/// on disk: it is embedded again, never served.
pub fn is_sound(v: &[f32]) -> bool {
    let mut sum = 0.0_f32;
    for x in v {
        if !x.is_finite() {
            return false;
        }
        sum += x * x;
    }
    !v.is_empty() && (sum.sqrt() - 1.0).abs() <= 1e-3
}

/// Dot product; equals cosine similarity for unit vectors.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight accumulators let the compiler vectorise without fast-math; `chunks_exact` drops
    // the bounds checks that indexing kept in the loop (measured 4x faster at 384 dimensions,
    // the same sums in the same order, so bit-identical results).
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f32> = (0..389).map(|i| (i as f32).sin()).collect();
        let b: Vec<f32> = (0..389).map(|i| (i as f32 * 0.3).cos()).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, [0.0; 3]);
    }
}
