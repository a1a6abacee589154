//! Locks that outlive a panic (pure): [`Locked`] for a mutex, [`Shared`] for a read-write lock.
//!
//! A thread that panics while holding a lock poisons it. Every state convdex guards with a lock
//! is whole between statements (a slot, a cache, a graph swapped in one assignment, a guard that
//! only serialises writers), so a later holder takes it as it is instead of panicking in turn:
//! one failed search or index run does not take every later one of the process down with it.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A mutex taken whether or not a panicking thread poisoned it.
pub(crate) trait Locked<T: ?Sized> {
    /// The lock, held.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A read-write lock taken whether or not a panicking thread poisoned it.
pub(crate) trait Shared<T: ?Sized> {
    /// Read access, held.
    fn reading(&self) -> RwLockReadGuard<'_, T>;
    /// Write access, held.
    fn writing(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> Shared<T> for RwLock<T> {
    fn reading(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn writing(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_as_it_was_left() {
        let (m, rw) = (Mutex::new(1), RwLock::new(2));
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let (_a, _b) = (m.locked(), rw.writing());
                panic!("poisons both");
            })
            .join()
        });
        assert!(m.is_poisoned() && rw.is_poisoned());
        *m.locked() += 1;
        *rw.writing() += 1;
        assert_eq!((*m.locked(), *rw.reading()), (2, 3));
    }
}
