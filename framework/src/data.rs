//! Per-request data by type: the store behind [`Context::insert_data`](crate::Context::insert_data).

use std::any::{Any, TypeId};

type Value = Box<dyn Any + Send + Sync>;

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
            let old = std::mem::replace(slot, Box::new(value));
            return old.downcast::<T>().ok().map(|b| *b);
        }
        if self.first.is_none() {
            self.first = Some((id, Box::new(value)));
        } else {
            self.more.push((id, Box::new(value)));
        }
        None
    }

    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.entry(TypeId::of::<T>())?.downcast_ref()
    }

    pub(crate) fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.entry_mut(TypeId::of::<T>())?.downcast_mut()
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
        value.downcast::<T>().ok().map(|b| *b)
    }
}

#[cfg(test)]
mod tests {
    use super::TypedData;

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
    }
}
