//! Per-request data by type: the store behind [`Context::insert_data`](crate::Context::insert_data).

use std::any::{Any, TypeId};
use std::cell::Cell;

/// A stored value: a `Box<Option<T>>`. Taking the value out leaves the box in place, holding
/// `None`, so the next value of its type goes into the same box.
type Value = Box<dyn Any + Send + Sync>;

/// A value's type, its box, and how to empty the box ([`empty`]).
type Entry = (TypeId, Value, fn(&mut Value));

/// Boxes a thread keeps for the next request: the first this many types of the last request
/// that stored data (a request carries a handful: a session, a trace, claims, a marker). A
/// request that stores more types allocates boxes for the rest, which are freed when it ends.
const KEPT_ENTRIES: usize = 8;

thread_local! {
    /// The list of emptied boxes (each holding `None`: no resource of the values') that the
    /// last request on this thread ended with, for the next request that stores data.
    static SPARE: Cell<Vec<Entry>> = const { Cell::new(Vec::new()) };
}

/// Drops the value in its box, leaving the box holding `None`.
fn empty<T: Any + Send + Sync>(value: &mut Value) {
    if let Some(value) = value.downcast_mut::<Option<T>>() {
        *value = None;
    }
}

/// A short list of values, one per type. A request carries a handful at most, so a scan by
/// type id beats hashing.
///
/// The list and its boxes are recycled as a whole: the first value a request stores takes the
/// list its thread's last request ended with (one thread-local access), where the boxes of that
/// request's types wait, empty; a value whose type has a box there moves into it, allocating
/// nothing. When the request ends its values are dropped in their boxes and the list goes back
/// to the thread (one access again). A request that stores nothing (`/json`) touches neither
/// the thread nor the heap.
#[derive(Default)]
pub(crate) struct TypedData {
    entries: Vec<Entry>,
    /// Bit i: entry i holds a value (the first 64 entries; any further entry counts as
    /// holding one). At the end of the request only these boxes are emptied, so a value that
    /// was taken out (the session's) costs nothing more there.
    filled: u64,
}

/// The bit of entry `index` in [`TypedData::filled`]: none past the 64th, whose entries are
/// always emptied.
fn bit(index: usize) -> u64 {
    if index < 64 { 1 << index } else { 0 }
}

/// The values still stored ([`TypedData::filled`]) are dropped in their boxes, and the list
/// of boxes (its first [`KEPT_ENTRIES`]) goes back to the thread for the next request. When
/// the thread already holds a list (two requests with data were in flight on it), the one
/// given back replaces it.
impl Drop for TypedData {
    fn drop(&mut self) {
        self.finish();
    }
}

impl TypedData {
    /// Ends the request's data (what [`Drop`] does): the values still stored are dropped and
    /// the list goes back to the thread, leaving an empty list that owns nothing, so a holder
    /// that keeps the data in a `ManuallyDrop` (the context) need not drop it after this.
    #[inline]
    pub(crate) fn finish(&mut self) {
        if self.entries.capacity() != 0 {
            self.recycle();
        }
    }

    fn recycle(&mut self) {
        let mut filled = self.filled;
        while filled != 0 {
            let index = filled.trailing_zeros() as usize;
            filled &= filled - 1;
            let (_, value, empty) = &mut self.entries[index];
            empty(value);
        }
        if self.entries.len() > 64 {
            for (_, value, empty) in &mut self.entries[64..] {
                empty(value);
            }
        }
        if self.entries.len() > KEPT_ENTRIES {
            self.entries.truncate(KEPT_ENTRIES);
        }
        self.filled = 0;
        let entries = std::mem::take(&mut self.entries);
        let _ = SPARE.try_with(|spare| drop(spare.replace(entries)));
    }

    /// The box of `T`'s values, empty or not.
    fn slot<T: Any + Send + Sync>(&self) -> Option<&Option<T>> {
        let id = TypeId::of::<T>();
        let (_, value, _) = self.entries.iter().find(|(k, ..)| *k == id)?;
        value.downcast_ref()
    }

    /// The box of `T`'s values and its index.
    fn slot_mut<T: Any + Send + Sync>(&mut self) -> Option<(usize, &mut Option<T>)> {
        let id = TypeId::of::<T>();
        let index = self.entries.iter().position(|(k, ..)| *k == id)?;
        Some((index, self.entries[index].1.downcast_mut()?))
    }

    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        if self.entries.capacity() == 0
            && let Ok(spare) = SPARE.try_with(Cell::take)
        {
            drop(std::mem::replace(&mut self.entries, spare));
        }
        if let Some((index, slot)) = self.slot_mut::<T>() {
            // The usual case (an empty box) moves the value in once; `replace` would also
            // move the empty value out and back.
            let old = if slot.is_none() {
                *slot = Some(value);
                None
            } else {
                slot.replace(value)
            };
            self.filled |= bit(index);
            return old;
        }
        self.filled |= bit(self.entries.len());
        self.entries
            .push((TypeId::of::<T>(), Box::new(Some(value)), empty::<T>));
        None
    }

    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.slot::<T>()?.as_ref()
    }

    pub(crate) fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.slot_mut::<T>()?.1.as_mut()
    }

    pub(crate) fn remove<T: Any + Send + Sync>(&mut self) -> Option<T> {
        let (index, slot) = self.slot_mut::<T>()?;
        let value = slot.take();
        self.filled &= !bit(index);
        value
    }
}

#[cfg(test)]
mod tests {
    use super::{KEPT_ENTRIES, SPARE, TypedData};

    struct Marker;

    /// Forgets the thread's spare list, so a test starts from none.
    fn clear_spare() {
        SPARE.with(|s| drop(s.take()));
    }

    /// How many boxes the thread's spare list holds.
    fn spare_len() -> usize {
        SPARE.with(|s| {
            let list = s.take();
            let len = list.len();
            s.set(list);
            len
        })
    }

    #[test]
    fn one_value_per_type_replaced_read_and_taken() {
        let mut data = TypedData::default();
        assert_eq!(data.insert(1u32), None);
        assert_eq!(data.insert("a"), None);
        assert_eq!(data.insert(String::from("b")), None);
        assert_eq!(data.insert(2u32), Some(1));
        assert_eq!(data.get::<u32>(), Some(&2));
        *data.get_mut::<String>().unwrap() += "c";
        assert_eq!(data.remove::<String>().as_deref(), Some("bc"));
        assert_eq!(data.get::<String>(), None);
        assert_eq!(data.get_mut::<String>(), None);
        assert_eq!(data.remove::<String>(), None);
        assert_eq!(data.remove::<u32>(), Some(2));
        assert_eq!(data.get::<&str>(), Some(&"a"));
        assert_eq!(data.insert(3u32), None, "a taken value is gone");
        assert_eq!(data.get::<u64>(), None);
        assert!(data.insert(Marker).is_none());
        assert!(data.get::<Marker>().is_some());
        assert!(data.remove::<Marker>().is_some());
        assert!(data.get::<Marker>().is_none());
    }

    /// The boxes a request ended with are the next request's: a value of the same type goes
    /// into the same box, and the list of boxes is the same list.
    #[test]
    fn the_next_request_reuses_the_list_and_its_boxes() {
        clear_spare();
        let mut data = TypedData::default();
        data.insert(String::from("first"));
        data.insert(5u64);
        let string = std::ptr::from_ref(data.get::<String>().unwrap()).cast::<u8>();
        let list = data.entries.as_ptr();
        // Taken out and put back within the request: the same box.
        assert_eq!(data.remove::<String>().as_deref(), Some("first"));
        data.insert(String::from("again"));
        assert_eq!(
            std::ptr::from_ref(data.get::<String>().unwrap()).cast::<u8>(),
            string
        );
        drop(data);
        let mut next = TypedData::default();
        assert_eq!(next.get::<String>(), None, "no value before it is stored");
        next.insert(String::from("second"));
        assert_eq!(next.entries.as_ptr(), list, "the same list");
        assert_eq!(
            std::ptr::from_ref(next.get::<String>().unwrap()).cast::<u8>(),
            string,
            "the same box"
        );
        assert_eq!(next.get::<String>().map(String::as_str), Some("second"));
        assert_eq!(
            next.get::<u64>(),
            None,
            "the last request's values are gone"
        );
        drop(next);
        clear_spare();
    }

    /// A request that stores nothing takes nothing from the thread.
    #[test]
    fn a_request_without_data_leaves_the_spare_list_alone() {
        clear_spare();
        let mut data = TypedData::default();
        data.insert(1u8);
        drop(data);
        let empty = TypedData::default();
        assert_eq!(empty.get::<u8>(), None);
        drop(empty);
        assert_eq!(spare_len(), 1);
        clear_spare();
    }

    /// Values still stored when the request ends are dropped then (their boxes are kept), and
    /// the thread keeps at most [`KEPT_ENTRIES`] boxes.
    #[test]
    fn values_are_dropped_at_the_end_and_the_kept_boxes_are_bounded() {
        use std::sync::Arc;
        clear_spare();
        let held = Arc::new(());
        let mut data = TypedData::default();
        data.insert(Arc::clone(&held));
        data.insert(Marker);
        macro_rules! more_types {
            ($($n:literal),*) => { $( data.insert([0u8; $n]); )* };
        }
        more_types!(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        assert_eq!(data.entries.len(), 12);
        drop(data);
        assert_eq!(Arc::strong_count(&held), 1, "the value was dropped");
        let kept = spare_len();
        assert_eq!(kept, KEPT_ENTRIES);
        clear_spare();
    }

    /// Every value still stored when the request ends is dropped, past the 64 entries the
    /// filled bits cover too, and none that was taken out is dropped twice.
    #[test]
    fn every_stored_value_is_dropped_once_whatever_its_place() {
        use std::sync::Arc;
        struct Tracked<const N: usize>(Arc<()>);
        clear_spare();
        let held = Arc::new(());
        let mut data = TypedData::default();
        let mut taken = Vec::new();
        macro_rules! insert_each {
            ($($n:literal),*) => { $( data.insert(Tracked::<$n>(Arc::clone(&held))); )* };
        }
        insert_each!(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45,
            46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67,
            68, 69
        );
        assert_eq!(Arc::strong_count(&held), 71);
        // One taken out below the 64th entry, one past it.
        taken.push(data.remove::<Tracked<3>>().map(|t| t.0));
        taken.push(data.remove::<Tracked<66>>().map(|t| t.0));
        drop(data);
        assert_eq!(Arc::strong_count(&held), 3, "68 dropped with the data");
        drop(taken);
        assert_eq!(Arc::strong_count(&held), 1);
        clear_spare();
    }

    /// Two requests with data in flight on one thread: the second makes a list of its own, and
    /// each keeps its values.
    #[test]
    fn two_requests_in_flight_keep_their_own_values() {
        clear_spare();
        let mut first = TypedData::default();
        first.insert(1u32);
        drop(first);
        let mut a = TypedData::default();
        let mut b = TypedData::default();
        a.insert(2u32);
        b.insert(3u32);
        assert_eq!((a.get::<u32>(), b.get::<u32>()), (Some(&2), Some(&3)));
        drop(a);
        assert_eq!(b.remove::<u32>(), Some(3));
        drop(b);
        clear_spare();
    }
}
