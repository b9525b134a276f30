// SPDX-License-Identifier: MIT OR Apache-2.0
//! Enumerated settings, declared once with [`choice_enum!`](crate::choice_enum): the Rust enum,
//! the nick and number a configuration file or a property takes for each value, and (with the
//! `gst` feature) the GLib enum type the element's property is made of.
//!
//! The Rust enum stays a plain enum, usable by code that links no GLib. The property side is
//! [`GEnum`], a wrapper that registers the GLib type on first use from the same table, so the
//! names `gst-inspect-1.0` shows and the names a file accepts cannot drift apart.

use std::fmt;

/// One value of a [`Choice`] enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChoiceValue<E> {
    pub value: E,
    /// The number a configuration file may give instead of the nick (nvinfer's numbers).
    pub number: i32,
    /// The name a property and a file take (`nms`).
    pub nick: &'static str,
    /// What the value means, as `gst-inspect-1.0` shows it.
    pub description: &'static str,
}

/// An enum whose values a setting takes by nick or number. Implemented by
/// [`choice_enum!`](crate::choice_enum).
pub trait Choice: Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The name of the GLib enum type of the property (`GstRsTrtInferClusterMode`).
    const TYPE_NAME: &'static str;
    /// Every value, in declaration order.
    const VALUES: &'static [ChoiceValue<Self>];

    /// This value's entry of [`Choice::VALUES`].
    fn entry(self) -> &'static ChoiceValue<Self> {
        Self::VALUES
            .iter()
            .find(|v| v.value == self)
            .expect("choice_enum! lists every variant")
    }

    fn number(self) -> i32 {
        self.entry().number
    }

    fn nick(self) -> &'static str {
        self.entry().nick
    }

    fn from_number(number: i32) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|v| v.number == number)
            .map(|v| v.value)
    }

    /// A configuration file's text: the nick, or the value's number.
    fn from_text(text: &str) -> Result<Self, String> {
        let text = text.trim();
        Self::VALUES
            .iter()
            .find(|v| v.nick == text)
            .map(|v| v.value)
            .or_else(|| text.parse().ok().and_then(Self::from_number))
            .ok_or_else(|| {
                let known: Vec<String> = Self::VALUES
                    .iter()
                    .map(|v| format!("{} ({})", v.nick, v.number))
                    .collect();
                format!(
                    "unknown value `{text}`; expected one of {}",
                    known.join(", ")
                )
            })
    }
}

/// Declares an enum whose values settings take by nick or number, and implements [`Choice`]
/// for it. Each variant is `Name = number => ("nick", "description")`; attributes such as
/// `#[default]` and doc comments go on the variants as usual. The enum derives `Debug`, `Clone`,
/// `Copy`, `PartialEq` and `Eq`; add others with `#[derive(..)]` before `enum`.
///
/// ```
/// ferrostream_core::choice_enum! {
///     /// How the objects are drawn.
///     #[derive(Default)]
///     pub enum Look: "GstExampleLook" {
///         #[default]
///         Boxes = 0 => ("boxes", "Boxes around the objects"),
///         Masks = 1 => ("masks", "The objects' masks"),
///     }
/// }
/// use ferrostream_core::settings::Choice;
/// assert_eq!(Look::from_text("masks"), Ok(Look::Masks));
/// assert_eq!(Look::from_text("0"), Ok(Look::Boxes));
/// assert!(Look::from_text("outline").unwrap_err().contains("boxes (0), masks (1)"));
/// ```
#[macro_export]
macro_rules! choice_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $type_name:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $number:literal => ($nick:literal, $description:literal)
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(i32)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant = $number, )+
        }

        impl $crate::settings::Choice for $name {
            const TYPE_NAME: &'static str = $type_name;
            const VALUES: &'static [$crate::settings::ChoiceValue<Self>] = &[
                $(
                    $crate::settings::ChoiceValue {
                        value: $name::$variant,
                        number: $number,
                        nick: $nick,
                        description: $description,
                    },
                )+
            ];
        }
    };
}

#[cfg(feature = "gst")]
pub use self::gtype::GEnum;

#[cfg(feature = "gst")]
mod gtype {
    use std::ffi::CString;
    use std::sync::Mutex;

    use gst::glib;
    use gst::glib::translate::{FromGlib, IntoGlib, from_glib};
    use gst::glib::value::{FromValue, GenericValueTypeChecker, ToValue, ValueType};

    use super::Choice;

    /// A [`Choice`] as a GLib enum value: what the element's property holds. The GLib type is
    /// registered from [`Choice::VALUES`] the first time it is needed.
    ///
    /// ```
    /// # ferrostream_core::choice_enum! { enum Look: "GstDocLook" { A = 0 => ("a", "A"), B = 1 => ("b", "B") } }
    /// use ferrostream_core::settings::GEnum;
    /// use gst::glib::prelude::*;
    /// let v = GEnum(Look::B).to_value();
    /// assert_eq!(v.get::<GEnum<Look>>().unwrap().0, Look::B);
    /// assert_eq!(GEnum::<Look>::static_type().name(), "GstDocLook");
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct GEnum<E>(pub E);

    impl<E: Choice> glib::prelude::StaticType for GEnum<E> {
        fn static_type() -> glib::Type {
            registered_type(E::TYPE_NAME, || {
                E::VALUES
                    .iter()
                    .map(|v| (v.number, v.description, v.nick))
                    .collect()
            })
        }
    }

    /// The GLib enum type `name`, registered from `values` (number, description, nick) when no
    /// type of that name exists yet.
    fn registered_type(
        name: &'static str,
        values: impl FnOnce() -> Vec<(i32, &'static str, &'static str)>,
    ) -> glib::Type {
        static REGISTERING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = glib::Type::from_name(name) {
            return t;
        }
        // GLib keeps pointers to the names and the value table for the life of the process.
        let leak = |s: &str| -> *const std::ffi::c_char {
            CString::new(s)
                .expect("choice_enum! names hold no NUL")
                .into_raw()
        };
        let mut table: Vec<glib::gobject_ffi::GEnumValue> = values()
            .into_iter()
            .map(|(value, description, nick)| glib::gobject_ffi::GEnumValue {
                value,
                value_name: leak(description),
                value_nick: leak(nick),
            })
            .collect();
        table.push(glib::gobject_ffi::GEnumValue {
            value: 0,
            value_name: std::ptr::null(),
            value_nick: std::ptr::null(),
        });
        let table: &'static [glib::gobject_ffi::GEnumValue] = Box::leak(table.into_boxed_slice());
        // SAFETY: the name and the zero-terminated table are leaked, so they outlive the type;
        // the lock and the lookup above make the name unregistered.
        let gtype =
            unsafe { glib::gobject_ffi::g_enum_register_static(leak(name), table.as_ptr()) };
        assert_ne!(gtype, 0, "GLib refused to register enum type {name}");
        // SAFETY: a non-zero GType returned by GLib.
        unsafe { from_glib(gtype) }
    }

    impl<E: Choice> ValueType for GEnum<E> {
        type Type = Self;
    }

    // SAFETY: the checker makes sure the value holds this enum type.
    unsafe impl<'a, E: Choice> FromValue<'a> for GEnum<E> {
        type Checker = GenericValueTypeChecker<Self>;

        unsafe fn from_value(value: &'a glib::Value) -> Self {
            let (_, v) = glib::EnumValue::from_value(value).expect("an enum value (type checked)");
            GEnum(E::from_number(v.value()).expect("a value of the registered enum"))
        }
    }

    impl<E: Choice> ToValue for GEnum<E> {
        fn to_value(&self) -> glib::Value {
            glib::EnumClass::with_type(<Self as glib::prelude::StaticType>::static_type())
                .and_then(|class| class.to_value(self.0.number()))
                .expect("a value of the registered enum")
        }

        fn value_type(&self) -> glib::Type {
            <Self as glib::prelude::StaticType>::static_type()
        }
    }

    impl<E: Choice> From<GEnum<E>> for glib::Value {
        fn from(v: GEnum<E>) -> Self {
            v.to_value()
        }
    }

    impl<E: Choice> IntoGlib for GEnum<E> {
        type GlibType = i32;

        fn into_glib(self) -> i32 {
            self.0.number()
        }
    }

    impl<E: Choice> FromGlib<i32> for GEnum<E> {
        unsafe fn from_glib(number: i32) -> Self {
            GEnum(E::from_number(number).expect("a value of the registered enum"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::choice_enum! {
        #[derive(Default)]
        enum Mode: "GstFerrostreamTestMode" {
            Auto = 0 => ("auto", "Auto: chosen from the model"),
            #[default]
            Fast = 1 => ("fast", "Fast"),
            Other = 100 => ("other", "Other"),
        }
    }

    #[test]
    fn text_is_a_nick_or_a_number() {
        assert_eq!(Mode::from_text("fast"), Ok(Mode::Fast));
        assert_eq!(Mode::from_text(" 100 "), Ok(Mode::Other));
        assert_eq!(Mode::default(), Mode::Fast);
        let err = Mode::from_text("2").unwrap_err();
        assert!(
            err.contains("`2`") && err.contains("auto (0), fast (1), other (100)"),
            "{err}"
        );
        assert_eq!((Mode::Other.number(), Mode::Other.nick()), (100, "other"));
    }

    #[cfg(feature = "gst")]
    #[test]
    fn the_glib_type_has_the_same_values() {
        use gst::glib;
        use gst::glib::prelude::*;
        let class = glib::EnumClass::with_type(GEnum::<Mode>::static_type()).unwrap();
        let values: Vec<(i32, String, String)> = class
            .values()
            .iter()
            .map(|v| (v.value(), v.nick().to_owned(), v.name().to_owned()))
            .collect();
        let expected: Vec<(i32, String, String)> = Mode::VALUES
            .iter()
            .map(|v| (v.number, v.nick.to_owned(), v.description.to_owned()))
            .collect();
        assert_eq!(values, expected);
        // A second lookup finds the registered type.
        assert_eq!(GEnum::<Mode>::static_type(), GEnum::<Mode>::static_type());
        let value = GEnum(Mode::Other).to_value();
        assert_eq!(value.get::<GEnum<Mode>>().unwrap(), GEnum(Mode::Other));
        let spec = glib::ParamSpecEnum::builder_with_default("mode", GEnum(Mode::Fast)).build();
        assert_eq!(
            spec.downcast_ref::<glib::ParamSpecEnum>()
                .unwrap()
                .default_value_as_i32(),
            1
        );
    }
}
