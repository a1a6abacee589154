//! A set of internal document ids as a bitmap: cheap to build from secondary indexes, to
//! intersect, and to test inside the graph search.

/// Bitmap over internal document ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DocSet {
    words: Vec<u64>,
}

impl DocSet {
    pub(crate) fn new() -> Self {
        DocSet::default()
    }

    pub(crate) fn insert(&mut self, id: u64) {
        let w = (id / 64) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (id % 64);
    }

    pub(crate) fn contains(&self, id: u64) -> bool {
        self.words.get((id / 64) as usize).is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub(crate) fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub(crate) fn intersect(&mut self, other: &DocSet) {
        self.words.truncate(other.words.len());
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= *b;
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros() as u64;
                out.push(i as u64 * 64 + b);
                w &= w - 1;
            }
        }
        out
    }
}

impl FromIterator<u64> for DocSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut s = DocSet::new();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_ops() {
        let mut a: DocSet = [1, 5, 64, 200].into_iter().collect();
        let b: DocSet = [5, 200, 300].into_iter().collect();
        a.intersect(&b);
        assert_eq!(a.to_vec(), vec![5, 200]);
        assert_eq!(a.len(), 2);
        assert!(a.contains(200) && !a.contains(64) && !a.contains(10_000));
    }
}
