//! Per-request data by type: the store behind [`Context::insert_data`](crate::Context::insert_data).

use std::any::{Any, TypeId};
use std::cell::Cell;

/// A stored value: a `Box<Option<T>>`, or a `Box<T>` for a zero-sized `T` (see [`Stored`]).
type Value = Box<dyn Any + Send + Sync>;

/// How a `T` is stored. A zero-sized `T` (a marker) is boxed as it is, which allocates nothing.
/// Any other `T` is boxed as `Option<T>`: taking the value out leaves the box holding `None`,
/// which goes back to this thread's spare ([`SPARE`]) instead of being freed, so a middleware
/// that stores and takes one value per request (the session) reuses one box instead of an
/// allocation and a free per request.
struct Stored<T>(std::marker::PhantomData<T>);

impl<T: Any + Send + Sync> Stored<T> {
    const ZERO_SIZED: bool = std::mem::size_of::<T>() == 0;

    fn boxed(value: T) -> Value {
        if Self::ZERO_SIZED {
            return Box::new(value);
        }
        if let Ok(Some(spare)) = SPARE.try_with(Cell::take) {
            match spare.downcast::<Option<T>>() {
                Ok(mut reused) => {
                    *reused = Some(value);
                    return reused;
                }
                // Another type's: kept for it.
                Err(other) => {
                    let _ = SPARE.try_with(|s| s.set(Some(other)));
                }
            }
        }
        Box::new(Some(value))
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

    /// The value out of its box; an emptied box becomes the thread's spare.
    fn take(value: Value) -> Option<T> {
        if Self::ZERO_SIZED {
            return value.downcast::<T>().ok().map(|b| *b);
        }
        let mut emptied = value.downcast::<Option<T>>().ok()?;
        let taken = emptied.take();
        // After thread-local destruction the box is simply dropped.
        let _ = SPARE.try_with(|s| s.set(Some(emptied)));
        taken
    }
}

thread_local! {
    /// One emptied value box per thread (holding `None`: no resource of the value's).
    static SPARE: Cell<Option<Value>> = const { Cell::new(None) };
}

/// A short list of values, one per type. A request carries a handful at most (a session,
/// claims, a marker), so a scan by type id beats hashing; the first value lives in place, and
/// a zero-sized value's box allocates nothing, so a request with one marker costs no
/// allocation.
#[derive(Default)]
pub(crate) struct TypedData {
    first: Option<(TypeId, Value)>,
    more: Vec<(TypeId, Value)>,
}

impl TypedData {
    fn entry(&self, id: TypeId) -> Option<&Value> {
        match &self.first {
            Some((first, value)) if *first == id => Some(value),
            _ => self.more.iter().find(|(k, _)| *k == id).map(|(_, v)| v),
        }
    }

    fn entry_mut(&mut self, id: TypeId) -> Option<&mut Value> {
        match &mut self.first {
            Some((first, value)) if *first == id => Some(value),
            _ => self.more.iter_mut().find(|(k, _)| *k == id).map(|(_, v)| v),
        }
    }

    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        let id = TypeId::of::<T>();
        if let Some(slot) = self.entry_mut(id) {
            return Stored::<T>::get_mut(slot).map(|old| std::mem::replace(old, value));
        }
        let boxed = Stored::<T>::boxed(value);
        if self.first.is_none() {
            self.first = Some((id, boxed));
        } else {
            self.more.push((id, boxed));
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
            Some((first, _)) if *first == id => self.first.take().map(|(_, v)| v),
            _ => {
                let index = self.more.iter().position(|(k, _)| *k == id)?;
                Some(self.more.swap_remove(index).1)
            }
        }?;
        Stored::<T>::take(value)
    }
}

#[cfg(test)]
mod tests {
    use super::{SPARE, TypedData};

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
        SPARE.set(None);
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
        SPARE.set(None);
    }
}
