//! The app's submit batches (`VkSubmitInfo` or `VkSubmitInfo2`) for the duration of one
//! `vkQueueSubmit*` call, and the copies of them we pass down with our command buffers spliced
//! in. The raw pointers the app hands us are turned into slices once, in [`AppBatches::new`]
//! at the hook's edge; everything after it is safe code over those slices.

use ash::vk;
use std::ffi::c_void;

/// One flavour of submit batch, as the splice needs it.
pub trait Batch: Copy {
    /// An element of the batch's command buffer array.
    type Entry: Copy;
    fn p_next(&self) -> *const c_void;
    /// Where this batch keeps its `pNext` (to unlink structs the driver must not see).
    fn p_next_field(&self) -> *mut *mut c_void;
    /// The command buffer array as given (pointer, count).
    fn entries_raw(&self) -> (*const Self::Entry, u32);
    fn handle(e: &Self::Entry) -> vk::CommandBuffer;
    /// An entry for one of our command buffers.
    fn ours(cb: vk::CommandBuffer) -> Self::Entry;
    /// This batch with `entries` (`n` of them) as its command buffer array, every other field
    /// as the app gave it. Builds a struct of raw pointers; nothing is dereferenced.
    fn with_entries(&self, entries: *const Self::Entry, n: u32) -> Self;
}

impl Batch for vk::SubmitInfo<'static> {
    type Entry = vk::CommandBuffer;
    fn p_next(&self) -> *const c_void {
        self.p_next
    }
    fn p_next_field(&self) -> *mut *mut c_void {
        &self.p_next as *const *const c_void as *mut *mut c_void
    }
    fn entries_raw(&self) -> (*const vk::CommandBuffer, u32) {
        (self.p_command_buffers, self.command_buffer_count)
    }
    fn handle(e: &vk::CommandBuffer) -> vk::CommandBuffer {
        *e
    }
    fn ours(cb: vk::CommandBuffer) -> vk::CommandBuffer {
        cb
    }
    fn with_entries(&self, entries: *const vk::CommandBuffer, n: u32) -> Self {
        vk::SubmitInfo {
            p_command_buffers: entries,
            command_buffer_count: n,
            ..*self
        }
    }
}

impl Batch for vk::SubmitInfo2<'static> {
    type Entry = vk::CommandBufferSubmitInfo<'static>;
    fn p_next(&self) -> *const c_void {
        self.p_next
    }
    fn p_next_field(&self) -> *mut *mut c_void {
        &self.p_next as *const *const c_void as *mut *mut c_void
    }
    fn entries_raw(&self) -> (*const Self::Entry, u32) {
        (self.p_command_buffer_infos, self.command_buffer_info_count)
    }
    fn handle(e: &Self::Entry) -> vk::CommandBuffer {
        e.command_buffer
    }
    fn ours(cb: vk::CommandBuffer) -> Self::Entry {
        vk::CommandBufferSubmitInfo::default().command_buffer(cb)
    }
    fn with_entries(&self, entries: *const Self::Entry, n: u32) -> Self {
        vk::SubmitInfo2 {
            p_command_buffer_infos: entries,
            command_buffer_info_count: n,
            ..*self
        }
    }
}

/// The app's batches of one submit call, valid for `'a` (the call).
pub struct AppBatches<'a, B: Batch> {
    raw: (*const B, u32),
    batches: &'a [B],
}

impl<'a, B: Batch> AppBatches<'a, B> {
    /// # Safety
    /// `p` points to `n` valid batches (or `n` is 0), each with a valid command buffer array and
    /// `pNext` chain, all valid and unchanged by others for `'a`: Vulkan's contract for the
    /// duration of a `vkQueueSubmit*` call, with `'a` ending before the call returns.
    pub unsafe fn new(p: *const B, n: u32) -> Self {
        let batches = if n == 0 || p.is_null() {
            &[][..]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(p, n as usize) }
        };
        AppBatches { raw: (p, n), batches }
    }

    /// The pointer and count as the app passed them (to forward the call unchanged).
    pub fn raw(&self) -> (*const B, u32) {
        self.raw
    }

    pub fn batches(&self) -> &'a [B] {
        self.batches
    }

    /// Batch `i`'s command buffer array (empty when the batch has none or `i` is out of range).
    pub fn entries(&self, i: usize) -> &'a [B::Entry] {
        let Some(b) = self.batches.get(i) else { return &[] };
        let (p, n) = b.entries_raw();
        if n == 0 || p.is_null() {
            return &[];
        }
        // SAFETY: `new`'s contract: every batch's command buffer array is valid for 'a.
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }

    /// Every command buffer of the call, in submission order.
    pub fn command_buffers(&self) -> impl Iterator<Item = vk::CommandBuffer> + '_ {
        (0..self.batches.len()).flat_map(|i| self.entries(i).iter().map(B::handle))
    }

    /// Whether our extra command buffers may join every batch: not with per-command-buffer
    /// device masks (`VkDeviceGroupSubmitInfo`) or in a protected submit.
    pub fn timeable(&self) -> bool {
        self.batches.iter().all(|b| {
            // SAFETY: `new`'s contract: every batch's chain is valid for 'a.
            !unsafe { untimeable_chain(b.p_next()) }
        })
    }
}

/// Whether a submit's pNext chain holds something our extra command buffers would break:
/// per-command-buffer device masks, or a protected submit.
///
/// # Safety
/// `p` must be a valid pNext chain.
unsafe fn untimeable_chain(mut p: *const c_void) -> bool {
    while !p.is_null() {
        // SAFETY: every chain element starts with VkBaseInStructure.
        let base = unsafe { &*(p as *const vk::BaseInStructure<'_>) };
        // SAFETY (inside): the sType says which struct it is.
        let protected = base.s_type == vk::StructureType::PROTECTED_SUBMIT_INFO
            && unsafe { (*(p as *const vk::ProtectedSubmitInfo<'_>)).protected_submit } != 0;
        if base.s_type == vk::StructureType::DEVICE_GROUP_SUBMIT_INFO || protected {
            return true;
        }
        p = base.p_next as *const c_void;
    }
    false
}

/// Reused arrays for the batches we pass down, one set per flavour: they keep their capacity
/// across frames. Between calls their raw pointers dangle but are never read: each submit
/// rebuilds them.
pub struct Scratch<B: Batch> {
    /// Every batch's command buffers, ours spliced in, back to back.
    pub entries: Vec<B::Entry>,
    /// Each batch's (start, count) in `entries`.
    pub ranges: Vec<(usize, usize)>,
    pub batches: Vec<B>,
}

impl<B: Batch> Default for Scratch<B> {
    fn default() -> Self {
        Scratch {
            entries: Vec::new(),
            ranges: Vec::new(),
            batches: Vec::new(),
        }
    }
}

impl<B: Batch> Scratch<B> {
    /// Rebuilds the batches from the app's: `reset` (our query resets) and `begin` before the
    /// first batch's command buffers, `end` after the last's. Allocates only while the arrays
    /// grow past their largest size so far.
    pub fn splice(
        &mut self,
        apps: &AppBatches<'_, B>,
        reset: impl Iterator<Item = vk::CommandBuffer>,
        begin: vk::CommandBuffer,
        end: vk::CommandBuffer,
    ) {
        self.entries.clear();
        self.ranges.clear();
        let n = apps.batches().len();
        let mut reset = Some(reset);
        for i in 0..n {
            let start = self.entries.len();
            if let Some(r) = reset.take() {
                self.entries.extend(r.map(B::ours));
                self.entries.push(B::ours(begin));
            }
            self.entries.extend_from_slice(apps.entries(i));
            if i + 1 == n {
                self.entries.push(B::ours(end));
            }
            self.ranges.push((start, self.entries.len() - start));
        }
        // Only now that `entries` no longer grows may pointers into it be taken.
        self.batches.clear();
        for (b, &(start, count)) in apps.batches().iter().zip(&self.ranges) {
            self.batches
                .push(b.with_entries(self.entries[start..].as_ptr(), count as u32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    fn cb(n: u64) -> vk::CommandBuffer {
        vk::CommandBuffer::from_raw(n)
    }

    fn spliced<B: Batch>(s: &Scratch<B>) -> Vec<Vec<u64>> {
        s.batches
            .iter()
            .map(|b| {
                let (p, n) = b.entries_raw();
                // SAFETY (test): the scratch's own arrays, just built.
                unsafe { std::slice::from_raw_parts(p, n as usize) }
                    .iter()
                    .map(|e| B::handle(e).as_raw())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn ours_go_around_the_apps_command_buffers_in_both_flavours() {
        let (a, b, c) = ([cb(1), cb(2)], [cb(3)], [] as [vk::CommandBuffer; 0]);
        let sem = [vk::Semaphore::from_raw(77)];
        let infos = [
            vk::SubmitInfo::default().command_buffers(&a).wait_semaphores(&sem),
            vk::SubmitInfo::default().command_buffers(&c),
            vk::SubmitInfo::default().command_buffers(&b),
        ];
        // SAFETY (test): three valid batches alive for the test.
        let apps = unsafe { AppBatches::new(infos.as_ptr().cast::<vk::SubmitInfo<'static>>(), 3) };
        assert!(apps.timeable());
        assert_eq!(
            apps.command_buffers().map(|c| c.as_raw()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let mut s = Scratch::default();
        s.splice(&apps, [cb(90), cb(91)].into_iter(), cb(100), cb(200));
        assert_eq!(spliced(&s), vec![vec![90, 91, 100, 1, 2], vec![], vec![3, 200]]);
        assert_eq!(
            s.batches[0].p_wait_semaphores,
            sem.as_ptr(),
            "the rest as the app gave it"
        );

        let infos2: Vec<vk::CommandBufferSubmitInfo> = [cb(5), cb(6)]
            .iter()
            .map(|&c| vk::CommandBufferSubmitInfo::default().command_buffer(c))
            .collect();
        let batches2 = [vk::SubmitInfo2::default().command_buffer_infos(&infos2)];
        // SAFETY (test): one valid batch alive for the test.
        let apps2 = unsafe { AppBatches::new(batches2.as_ptr().cast::<vk::SubmitInfo2<'static>>(), 1) };
        let mut s2 = Scratch::default();
        s2.splice(&apps2, std::iter::empty(), cb(100), cb(200));
        assert_eq!(spliced(&s2), vec![vec![100, 5, 6, 200]]);
        // No batches: nothing to splice into.
        // SAFETY (test): zero batches.
        let none = unsafe { AppBatches::<vk::SubmitInfo<'static>>::new(std::ptr::null(), 0) };
        s.splice(&none, std::iter::empty(), cb(1), cb(2));
        assert!(s.batches.is_empty());
    }

    #[test]
    fn protected_and_device_group_submits_are_not_timeable() {
        let mut prot = vk::ProtectedSubmitInfo::default().protected_submit(true);
        let a = [cb(1)];
        let infos = [vk::SubmitInfo::default().command_buffers(&a).push_next(&mut prot)];
        // SAFETY (test): a valid batch with a valid chain.
        let apps = unsafe { AppBatches::new(infos.as_ptr().cast::<vk::SubmitInfo<'static>>(), 1) };
        assert!(!apps.timeable());
        let mut group = vk::DeviceGroupSubmitInfo::default();
        let infos = [vk::SubmitInfo::default().command_buffers(&a).push_next(&mut group)];
        // SAFETY (test): as above.
        let apps = unsafe { AppBatches::new(infos.as_ptr().cast::<vk::SubmitInfo<'static>>(), 1) };
        assert!(!apps.timeable());
    }
}
