//! Where an index's vectors live, row after row: the rows of a persisted vectors file first,
//! scanned where they lie (a read-only memory map, on little-endian Unix: [`crate::mapped`]
//! says why and why not elsewhere), then the rows added since, in memory. A cold search used
//! to copy every vector file into fresh memory before its first scan; at 30 times the shared
//! corpus that copy was the largest part of a cold hybrid search. The file is still read once,
//! for its checksum, before any row is used.

/// The vectors, `dim` floats a row: `mapped` rows first, then `owned` rows.
#[derive(Default)]
pub(super) struct Arena {
    #[cfg(all(unix, target_endian = "little"))]
    mapped: Option<Mapped>,
    owned: Vec<f32>,
}

/// The vector rows of a mapped vectors file: `floats` floats from byte `start` on.
#[cfg(all(unix, target_endian = "little"))]
struct Mapped {
    map: memmap2::Mmap,
    start: usize,
    floats: usize,
}

impl Arena {
    /// The mapped rows as floats (empty when nothing is mapped).
    fn mapped(&self) -> &[f32] {
        #[cfg(all(unix, target_endian = "little"))]
        if let Some(m) = &self.mapped {
            // Length and alignment were checked when the file was mapped (`Arena::map`), and a
            // map does not move: this never takes the empty branch.
            return m
                .map
                .get(m.start..m.start + m.floats * 4)
                .and_then(|bytes| <[f32] as zerocopy::FromBytes>::ref_from_bytes(bytes).ok())
                .unwrap_or(&[]);
        }
        &[]
    }

    /// Floats held, mapped and in memory.
    pub(super) fn len(&self) -> usize {
        self.mapped().len() + self.owned.len()
    }

    /// Whether no row is held.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `dim` floats of row `row`.
    pub(super) fn row(&self, row: usize, dim: usize) -> &[f32] {
        let mapped = self.mapped();
        let start = row * dim;
        if start < mapped.len() {
            &mapped[start..start + dim]
        } else {
            let start = start - mapped.len();
            &self.owned[start..start + dim]
        }
    }

    /// The floats of every row from `row` on, as at most two contiguous pieces.
    pub(super) fn rows_from(&self, row: usize, dim: usize) -> [&[f32]; 2] {
        let mapped = self.mapped();
        let start = row * dim;
        if start < mapped.len() { [&mapped[start..], &self.owned] } else { [&[], &self.owned[start - mapped.len()..]] }
    }

    /// Appends a row.
    pub(super) fn push(&mut self, v: &[f32]) {
        self.owned.extend_from_slice(v);
    }

    /// Grows the in-memory rows by `floats` zeros and returns them to be filled (a file read
    /// into memory: on Windows, on a big-endian machine, or where a map failed).
    pub(super) fn grow(&mut self, floats: usize) -> &mut [f32] {
        let start = self.owned.len();
        self.owned.resize(start + floats, 0.0);
        &mut self.owned[start..]
    }

    /// Maps `file` (already checked: its length is `len`; [`crate::mapped::map`]) and returns
    /// its bytes; the rows are taken into use by [`Arena::keep_mapped`] once the caller has
    /// verified them. `None` when rows are held already (a map holds the first rows only) or the
    /// map fails: the caller reads the file instead.
    #[cfg(all(unix, target_endian = "little"))]
    pub(super) fn map(&self, file: &std::fs::File, len: u64) -> Option<memmap2::Mmap> {
        if !self.is_empty() {
            return None;
        }
        crate::mapped::map(file, len)
    }

    /// Takes `floats` floats of `map` from byte `start` on as the first rows. `false` (and
    /// nothing kept) when they do not fit the map or are not aligned for `f32`.
    #[cfg(all(unix, target_endian = "little"))]
    pub(super) fn keep_mapped(&mut self, map: memmap2::Mmap, start: usize, floats: usize) -> bool {
        let fits = map
            .get(start..start.saturating_add(floats.saturating_mul(4)))
            .is_some_and(|bytes| <[f32] as zerocopy::FromBytes>::ref_from_bytes(bytes).is_ok());
        if !fits || !self.is_empty() {
            return false;
        }
        self.mapped = Some(Mapped { map, start, floats });
        true
    }
}
