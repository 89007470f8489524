//! One named place for the `dyn Any` check that tells a generic value's concrete type without
//! boxing it (axum's `util::try_downcast` is the same device).

use std::any::Any;

/// `value` as a `T` when it is one, else `value` back unchanged.
///
/// A generic function uses it to take a cheaper path for one type it knows (a counted
/// [`Slot`](crate::slot::Slot) kept in place, an already shared middleware not wrapped
/// twice). The check compares two type ids, which the compiler folds away once `K` is known:
/// no allocation, no cost at run time.
pub(crate) fn try_downcast<T: 'static, K: 'static>(value: K) -> Result<T, K> {
    let mut value = Some(value);
    match <dyn Any>::downcast_mut::<Option<T>>(&mut value) {
        Some(same) => Ok(same.take().unwrap_or_else(|| unreachable!("just filled"))),
        None => Err(value.unwrap_or_else(|| unreachable!("not taken"))),
    }
}

#[cfg(test)]
mod tests {
    use super::try_downcast;

    #[test]
    fn a_value_of_the_type_asked_for_is_given_as_it_and_any_other_back() {
        assert_eq!(try_downcast::<u32, _>(7u32), Ok(7));
        assert_eq!(try_downcast::<u32, _>(7u64), Err(7u64));
        assert_eq!(
            try_downcast::<String, _>("text"),
            Err("text"),
            "a &str is not a String"
        );
        let boxed: Box<dyn Send> = Box::new(1u8);
        assert!(try_downcast::<Box<dyn Send>, _>(boxed).is_ok());
    }
}
