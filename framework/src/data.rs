//! Per-request data by type: the store behind [`Context::insert_data`](crate::Context::insert_data).

use std::any::{Any, TypeId};
use std::cell::Cell;

/// A stored value: a `Box<Option<T>>`, or a `Box<T>` for a zero-sized `T` (see [`Stored`]).
type Value = Box<dyn Any + Send + Sync>;

/// How a `T` is stored. A zero-sized `T` (a marker) is boxed as it is, which allocates nothing.
/// Any other `T` is boxed as `Option<T>`: taking the value out leaves the box holding `None`,
/// which goes back to this thread's spares ([`SPARES`]) instead of being freed, so middleware
/// that store and take a value per request (the session, the trace) reuse their boxes instead
/// of an allocation and a free per request.
struct Stored<T>(std::marker::PhantomData<T>);

impl<T: Any + Send + Sync> Stored<T> {
    const ZERO_SIZED: bool = std::mem::size_of::<T>() == 0;

    fn boxed(value: T) -> Value {
        if Self::ZERO_SIZED {
            return Box::new(value);
        }
        let reused = SPARES.try_with(|spares| {
            for slot in spares {
                let Some(spare) = slot.take() else { continue };
                match spare.downcast::<Option<T>>() {
                    Ok(reused) => return Some(reused),
                    // Another type's: kept for it.
                    Err(other) => slot.set(Some(other)),
                }
            }
            None
        });
        match reused {
            Ok(Some(mut reused)) => {
                *reused = Some(value);
                reused
            }
            _ => Box::new(Some(value)),
        }
    }

    fn get(value: &Value) -> Option<&T> {
        if Self::ZERO_SIZED {
            value.downcast_ref::<T>()
        } else {
            value.downcast_ref::<Option<T>>()?.as_ref()
        }
    }

    fn get_mut(value: &mut Value) -> Option<&mut T> {
        if Self::ZERO_SIZED {
            value.downcast_mut::<T>()
        } else {
            value.downcast_mut::<Option<T>>()?.as_mut()
        }
    }

    /// Drops the value in its box, leaving the box empty (`None`); whether the box is worth
    /// keeping as a spare (a zero-sized value's box allocated nothing).
    fn empty(value: &mut Value) -> bool {
        if Self::ZERO_SIZED {
            return false;
        }
        value
            .downcast_mut::<Option<T>>()
            .map(|v| *v = None)
            .is_some()
    }

    /// The value out of its box; an emptied box becomes the thread's spare.
    fn take(value: Value) -> Option<T> {
        if Self::ZERO_SIZED {
            return value.downcast::<T>().ok().map(|b| *b);
        }
        let mut emptied = value.downcast::<Option<T>>().ok()?;
        let taken = emptied.take();
        keep_spare(emptied);
        taken
    }
}

/// Emptied boxes kept per thread: one each for the few types a request stores.
const SPARE_BOXES: usize = 4;

thread_local! {
    /// Emptied value boxes (holding `None`: no resource of the values'), of different types.
    static SPARES: [Cell<Option<Value>>; SPARE_BOXES] = const { [const { Cell::new(None) }; SPARE_BOXES] };
}

thread_local! {
    /// An emptied list of further values ([`TypedData::more`]), kept for the next request with
    /// more than one value (a trace and a session), so it allocates no list.
    static SPARE_LIST: Cell<Vec<Entry>> = const { Cell::new(Vec::new()) };
}

/// Keeps an emptied box as a spare: in a free place, else in place of the first (which is
/// freed). After thread-local destruction the box is simply dropped.
fn keep_spare(emptied: Value) {
    let _ = SPARES.try_with(|spares| {
        let mut emptied = Some(emptied);
        for slot in spares {
            let current = slot.take();
            if current.is_none() {
                slot.set(emptied.take());
                return;
            }
            slot.set(current);
        }
        spares[0].set(emptied);
    });
}

/// A short list of values, one per type. A request carries a handful at most (a session,
/// claims, a marker), so a scan by type id beats hashing; the first value lives in place, and
/// a zero-sized value's box allocates nothing, so a request with one marker costs no
/// allocation.
#[derive(Default)]
pub(crate) struct TypedData {
    first: Option<Entry>,
    more: Vec<Entry>,
}

/// A value, its type, and how to empty its box ([`Stored::empty`]).
type Entry = (TypeId, Value, fn(&mut Value) -> bool);

/// Values still stored when the request ends are dropped in their boxes, and the boxes kept
/// as spares: a value that lives to the end of every request (the trace) reuses its box too.
/// The emptied list of further values is kept as well ([`SPARE_LIST`]).
/// (A second value in place would spare a request with a trace and a session its list, but
/// the bigger context costs every request more: `/json` 11 537 instructions against 11 474,
/// the user service's login 17 658 against 17 790.)
impl Drop for TypedData {
    fn drop(&mut self) {
        if let Some((_, mut value, empty)) = self.first.take()
            && empty(&mut value)
        {
            keep_spare(value);
        }
        if self.more.capacity() == 0 {
            return;
        }
        for (_, mut value, empty) in self.more.drain(..) {
            if empty(&mut value) {
                keep_spare(value);
            }
        }
        let list = std::mem::take(&mut self.more);
        let _ = SPARE_LIST.try_with(|spare| spare.set(list));
    }
}

impl TypedData {
    fn entry(&self, id: TypeId) -> Option<&Value> {
        match &self.first {
            Some((first, value, _)) if *first == id => Some(value),
            _ => self.more.iter().find(|(k, ..)| *k == id).map(|(_, v, _)| v),
        }
    }

    fn entry_mut(&mut self, id: TypeId) -> Option<&mut Value> {
        match &mut self.first {
            Some((first, value, _)) if *first == id => Some(value),
            _ => self
                .more
                .iter_mut()
                .find(|(k, ..)| *k == id)
                .map(|(_, v, _)| v),
        }
    }

    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        let id = TypeId::of::<T>();
        if let Some(slot) = self.entry_mut(id) {
            return Stored::<T>::get_mut(slot).map(|old| std::mem::replace(old, value));
        }
        let entry = (
            id,
            Stored::<T>::boxed(value),
            Stored::<T>::empty as fn(&mut Value) -> bool,
        );
        if self.first.is_none() {
            self.first = Some(entry);
        } else {
            if self.more.capacity() == 0
                && let Ok(spare) = SPARE_LIST.try_with(Cell::take)
            {
                self.more = spare;
            }
            self.more.push(entry);
        }
        None
    }

    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        Stored::<T>::get(self.entry(TypeId::of::<T>())?)
    }

    pub(crate) fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        Stored::<T>::get_mut(self.entry_mut(TypeId::of::<T>())?)
    }

    pub(crate) fn remove<T: Any + Send + Sync>(&mut self) -> Option<T> {
        let id = TypeId::of::<T>();
        let value = match &self.first {
            Some((first, ..)) if *first == id => self.first.take().map(|(_, v, _)| v),
            _ => {
                let index = self.more.iter().position(|(k, ..)| *k == id)?;
                Some(self.more.swap_remove(index).1)
            }
        }?;
        Stored::<T>::take(value)
    }
}

#[cfg(test)]
mod tests {
    use super::{SPARES, TypedData};

    struct Marker;

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
        assert_eq!(data.remove::<u32>(), Some(2));
        assert_eq!(data.get::<&str>(), Some(&"a"));
        assert_eq!(data.insert(3u32), None);
        assert_eq!(data.get::<u64>(), None);
        assert!(data.insert(Marker).is_none());
        assert!(data.get::<Marker>().is_some());
        assert!(data.remove::<Marker>().is_some());
        assert!(data.get::<Marker>().is_none());
    }

    /// A taken value's box is kept, empty, and the next value of its type goes into it.
    #[test]
    fn an_emptied_box_is_reused_by_the_next_value_of_its_type() {
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
        let mut data = TypedData::default();
        data.insert(String::from("first"));
        let address = std::ptr::from_ref(data.get::<String>().unwrap()).cast::<u8>();
        assert_eq!(data.remove::<String>().as_deref(), Some("first"));
        let mut next = TypedData::default();
        next.insert(String::from("second"));
        let reused = std::ptr::from_ref(next.get::<String>().unwrap()).cast::<u8>();
        assert_eq!(reused, address, "the same box");
        assert_eq!(next.get::<String>().map(String::as_str), Some("second"));
        // A spare of another type stays for it.
        next.remove::<String>();
        let mut other = TypedData::default();
        other.insert(7u64);
        assert_eq!(other.remove::<u64>(), Some(7));
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
    }

    /// Two boxed types per request (a trace and a session): both boxes come back.
    #[test]
    fn two_types_keep_a_box_each() {
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
        let mut data = TypedData::default();
        data.insert(String::from("a"));
        data.insert(5u64);
        let (a, b) = (
            std::ptr::from_ref(data.get::<String>().unwrap()).cast::<u8>(),
            std::ptr::from_ref(data.get::<u64>().unwrap()).cast::<u8>(),
        );
        data.remove::<String>();
        data.remove::<u64>();
        let mut next = TypedData::default();
        next.insert(6u64);
        next.insert(String::from("b"));
        assert_eq!(
            std::ptr::from_ref(next.get::<u64>().unwrap()).cast::<u8>(),
            b
        );
        assert_eq!(
            std::ptr::from_ref(next.get::<String>().unwrap()).cast::<u8>(),
            a
        );
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
    }

    /// The list of further values goes back to the thread when the data drops, and the next
    /// request with more than one value takes it instead of allocating one.
    #[test]
    fn the_list_of_further_values_is_reused() {
        use super::SPARE_LIST;
        SPARE_LIST.with(|s| s.take());
        let mut data = TypedData::default();
        data.insert(1u8);
        data.insert(2u16);
        let list = data.more.as_ptr();
        drop(data);
        let mut next = TypedData::default();
        next.insert(3u32);
        assert_eq!(next.more.capacity(), 0, "one value: no list taken");
        next.insert(4u64);
        assert_eq!(next.more.as_ptr(), list, "the same list");
        assert_eq!(next.get::<u64>(), Some(&4));
        drop(next);
        SPARE_LIST.with(|s| s.take());
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
    }

    /// A value still stored when the list drops is dropped, and its box is the next one's.
    #[test]
    fn dropping_the_list_drops_its_values_and_keeps_their_boxes() {
        use std::sync::Arc;
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
        let held = Arc::new(());
        let mut data = TypedData::default();
        data.insert(Arc::clone(&held));
        data.insert(Marker);
        let address = std::ptr::from_ref(data.get::<Arc<()>>().unwrap()).cast::<u8>();
        drop(data);
        assert_eq!(Arc::strong_count(&held), 1, "the value was dropped");
        let mut next = TypedData::default();
        next.insert(Arc::clone(&held));
        let reused = std::ptr::from_ref(next.get::<Arc<()>>().unwrap()).cast::<u8>();
        assert_eq!(reused, address, "the same box");
        drop(next);
        SPARES.with(|s| s.iter().for_each(|c| c.set(None)));
    }
}
