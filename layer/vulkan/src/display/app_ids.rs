//! What the display-time sources are told of the app's own present ids.

/// The present ids the app passes with a present, as the present hook read them from its
/// chain: the sources use them instead of their own (two id sequences on one swapchain would
/// break VUID-VkPresentIdKHR-presentIds-04999).
#[derive(Clone, Copy, Debug, Default)]
pub struct AppPresentIds<'a> {
    /// The app chains a `VkPresentIdKHR`.
    pub id_chained: bool,
    /// Its ids, where its array is not null and not empty.
    pub id: Option<&'a [u64]>,
    /// The ids of the app's `VkPresentId2KHR`, likewise.
    pub id2: Option<&'a [u64]>,
}
