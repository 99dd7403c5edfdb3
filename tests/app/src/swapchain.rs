//! One window's surface and swapchain, rebuilt (with oldSwapchain) on resize.

use std::error::Error;

use ash::vk;

use crate::args::PresentMode;
use crate::context::Gpu;
use crate::window::{Display, XWindow};

/// A colour target the recorder can render into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub image: vk::Image,
    pub view: vk::ImageView,
    pub extent: vk::Extent2D,
    /// Array layers of `image` and `view` (2 with `--multiview`).
    pub layers: u32,
    /// The framebuffer of `view` with `--render-pass`, else null.
    pub framebuffer: vk::Framebuffer,
    /// The swapchain image that ends the frame in PRESENT_SRC: `image` itself,
    /// or (with `--multiview`) the one layer 0 of `image` is copied into;
    /// None for offscreen targets.
    pub present: Option<vk::Image>,
}

pub struct Swapchain {
    pub surface: vk::SurfaceKHR,
    pub swapchain: vk::SwapchainKHR,
    pub format: vk::Format,
    /// Image usage: colour attachment, plus transfer destination with `--multiview`.
    pub usage: vk::ImageUsageFlags,
    pub present_mode: vk::PresentModeKHR,
    pub extent: vk::Extent2D,
    pub images: Vec<vk::Image>,
    pub views: Vec<vk::ImageView>,
    /// One per image rather than per frame in flight: a present's wait is only
    /// known to be finished once that image is acquired again.
    pub render_finished: Vec<vk::Semaphore>,
    /// The size the window manager last reported, used when the surface does
    /// not dictate an extent.
    pub window_size: vk::Extent2D,
    pub needs_rebuild: bool,
}

pub fn to_vk(mode: PresentMode) -> vk::PresentModeKHR {
    match mode {
        PresentMode::Immediate => vk::PresentModeKHR::IMMEDIATE,
        PresentMode::Mailbox => vk::PresentModeKHR::MAILBOX,
        PresentMode::Fifo => vk::PresentModeKHR::FIFO,
        PresentMode::FifoRelaxed => vk::PresentModeKHR::FIFO_RELAXED,
    }
}

impl Swapchain {
    pub fn new(
        gpu: &Gpu,
        display: *mut Display,
        window: XWindow,
        size: vk::Extent2D,
        wanted: PresentMode,
        format: Option<vk::Format>,
        usage: vk::ImageUsageFlags,
    ) -> Result<Swapchain, Box<dyn Error>> {
        let surface_fn = gpu.surface.as_ref().expect("windowed gpu");
        let info = vk::XlibSurfaceCreateInfoKHR::default()
            .dpy(display.cast())
            .window(window);
        // SAFETY: `display` is an open Xlib connection and `window` one of its
        // windows; both outlive the surface (App drops surfaces first).
        let surface = unsafe {
            gpu.xlib_surface
                .as_ref()
                .expect("windowed gpu")
                .create_xlib_surface(&info, None)?
        };
        let mut me = Swapchain {
            surface,
            swapchain: vk::SwapchainKHR::null(),
            format: vk::Format::UNDEFINED,
            usage,
            present_mode: vk::PresentModeKHR::FIFO,
            extent: size,
            images: Vec::new(),
            views: Vec::new(),
            render_finished: Vec::new(),
            window_size: size,
            needs_rebuild: false,
        };
        // SAFETY: `surface` is live and belongs to this physical device's instance.
        let (supported, formats, modes) = unsafe {
            (
                surface_fn.get_physical_device_surface_support(gpu.physical, gpu.queue_family, surface)?,
                surface_fn.get_physical_device_surface_formats(gpu.physical, surface)?,
                surface_fn.get_physical_device_surface_present_modes(gpu.physical, surface)?,
            )
        };
        if !supported {
            me.destroy(gpu);
            return Err("the graphics queue cannot present to this window".into());
        }
        me.format = match format {
            Some(f) if formats.iter().any(|s| s.format == f) => f,
            Some(f) => {
                me.destroy(gpu);
                return Err(format!("window does not support format {f:?}").into());
            }
            None => formats
                .iter()
                .map(|s| s.format)
                .find(|&f| f == vk::Format::B8G8R8A8_UNORM)
                .unwrap_or(formats[0].format),
        };
        let want = to_vk(wanted);
        me.present_mode = if modes.contains(&want) {
            want
        } else {
            eprintln!(
                "framescope-testapp: present mode {} unsupported, falling back to fifo",
                wanted.name()
            );
            vk::PresentModeKHR::FIFO
        };
        match me.rebuild(gpu) {
            Ok(()) if !me.needs_rebuild => Ok(me),
            Ok(()) => {
                me.destroy(gpu);
                Err("window has no area".into())
            }
            Err(e) => {
                me.destroy(gpu);
                Err(e)
            }
        }
    }

    /// Creates a swapchain sized to the surface, retiring the previous one.
    /// The caller must have waited for the device to go idle. Leaves
    /// `needs_rebuild` set while the window has no area (nothing to render).
    pub fn rebuild(&mut self, gpu: &Gpu) -> Result<(), Box<dyn Error>> {
        let surface_fn = gpu.surface.as_ref().expect("windowed gpu");
        let swap_fn = gpu.swapchain.as_ref().expect("windowed gpu");
        // SAFETY: live surface of this instance.
        let caps = unsafe { surface_fn.get_physical_device_surface_capabilities(gpu.physical, self.surface)? };
        let extent = if caps.current_extent.width == u32::MAX {
            vk::Extent2D {
                width: self
                    .window_size
                    .width
                    .clamp(caps.min_image_extent.width, caps.max_image_extent.width),
                height: self
                    .window_size
                    .height
                    .clamp(caps.min_image_extent.height, caps.max_image_extent.height),
            }
        } else {
            caps.current_extent
        };
        if extent.width == 0 || extent.height == 0 {
            self.needs_rebuild = true;
            return Ok(());
        }
        if !caps.supported_usage_flags.contains(self.usage) {
            return Err(format!("swapchain images do not support usage {:?}", self.usage).into());
        }
        let mut image_count = caps.min_image_count.max(3);
        if caps.max_image_count != 0 {
            image_count = image_count.min(caps.max_image_count);
        }
        let old = self.swapchain;
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(self.surface)
            .min_image_count(image_count)
            .image_format(self.format)
            .image_color_space(vk::ColorSpaceKHR::SRGB_NONLINEAR)
            .image_extent(extent)
            .image_array_layers(1)
            .image_usage(self.usage)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            .present_mode(self.present_mode)
            .clipped(true)
            .old_swapchain(old);
        // SAFETY: the device is idle (caller contract), so the old images,
        // views and semaphores are unused and can go once the new chain exists.
        unsafe {
            let new = swap_fn.create_swapchain(&info, None)?;
            self.release_images(gpu);
            if old != vk::SwapchainKHR::null() {
                swap_fn.destroy_swapchain(old, None);
            }
            self.swapchain = new;
            self.extent = extent;
            self.images = swap_fn.get_swapchain_images(new)?;
            for &image in &self.images {
                let view = gpu.device.create_image_view(
                    &vk::ImageViewCreateInfo::default()
                        .image(image)
                        .view_type(vk::ImageViewType::TYPE_2D)
                        .format(self.format)
                        .subresource_range(color_range()),
                    None,
                )?;
                self.views.push(view);
                let sem = gpu.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None)?;
                self.render_finished.push(sem);
            }
        }
        self.needs_rebuild = false;
        Ok(())
    }

    pub fn target(&self, image_index: u32) -> Target {
        let image = self.images[image_index as usize];
        Target {
            image,
            view: self.views[image_index as usize],
            extent: self.extent,
            layers: 1,
            framebuffer: vk::Framebuffer::null(),
            present: Some(image),
        }
    }

    fn release_images(&mut self, gpu: &Gpu) {
        // SAFETY: caller guarantees the device is idle.
        unsafe {
            for v in self.views.drain(..) {
                gpu.device.destroy_image_view(v, None);
            }
            for s in self.render_finished.drain(..) {
                gpu.device.destroy_semaphore(s, None);
            }
        }
        self.images.clear();
    }

    /// Explicit rather than Drop because it needs the Gpu; the device must be idle.
    pub fn destroy(&mut self, gpu: &Gpu) {
        self.release_images(gpu);
        // SAFETY: device idle; the swapchain is destroyed before its surface.
        unsafe {
            if self.swapchain != vk::SwapchainKHR::null() {
                gpu.swapchain
                    .as_ref()
                    .expect("windowed gpu")
                    .destroy_swapchain(self.swapchain, None);
                self.swapchain = vk::SwapchainKHR::null();
            }
            gpu.surface
                .as_ref()
                .expect("windowed gpu")
                .destroy_surface(self.surface, None);
        }
    }
}

pub fn color_range() -> vk::ImageSubresourceRange {
    color_layers(1)
}

/// The colour aspect of mip 0, layers `0..layers`.
pub fn color_layers(layers: u32) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(layers)
}
