//! `FRAMESCOPE_FAULT`: which faults to inject, as comma-separated items.

use ash::vk;

/// A create or allocate command `oom_after_present` or `oom_always` can make fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Create {
    Device,
    Swapchain,
    QueryPool,
    Image,
    Buffer,
    Memory,
    CommandPool,
    CommandBuffers,
    Semaphore,
    Fence,
}

impl Create {
    pub const ALL: [Create; 10] = [
        Create::Device,
        Create::Swapchain,
        Create::QueryPool,
        Create::Image,
        Create::Buffer,
        Create::Memory,
        Create::CommandPool,
        Create::CommandBuffers,
        Create::Semaphore,
        Create::Fence,
    ];

    /// The name in `oom_after_present`'s and `oom_always`'s lists.
    pub fn name(self) -> &'static str {
        match self {
            Create::Device => "device",
            Create::Swapchain => "swapchain",
            Create::QueryPool => "query_pool",
            Create::Image => "image",
            Create::Buffer => "buffer",
            Create::Memory => "memory",
            Create::CommandPool => "command_pool",
            Create::CommandBuffers => "command_buffers",
            Create::Semaphore => "semaphore",
            Create::Fence => "fence",
        }
    }

    /// What the failing call returns: device memory for what lives in it, host memory for
    /// the rest.
    pub fn error(self) -> vk::Result {
        match self {
            Create::QueryPool | Create::Image | Create::Buffer | Create::Memory => {
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            }
            Create::Device
            | Create::Swapchain
            | Create::CommandPool
            | Create::CommandBuffers
            | Create::Semaphore
            | Create::Fence => vk::Result::ERROR_OUT_OF_HOST_MEMORY,
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The bits of the `+`-joined [`Create`] names of list item `key`.
fn creates(key: &str, value: Option<&str>) -> Result<u16, String> {
    let v = value.ok_or_else(|| format!("`{key}` needs a list (`{key}=image+buffer`)"))?;
    let mut bits = 0;
    for name in v.split('+').map(str::trim) {
        let Some(k) = Create::ALL.iter().find(|k| k.name() == name) else {
            let known: Vec<&str> = Create::ALL.iter().map(|k| k.name()).collect();
            return Err(format!("`{key}`: unknown `{name}` (known: {})", known.join(", ")));
        };
        bits |= k.bit();
    }
    Ok(bits)
}

/// The faults to inject. The default injects nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The device is lost from this submit on (1-based, over the device).
    pub lost_at_submit: Option<u64>,
    /// Every Nth present returns `VK_ERROR_OUT_OF_DATE_KHR`.
    pub out_of_date_every: Option<u64>,
    /// Every Nth present returns `VK_SUBOPTIMAL_KHR`.
    pub suboptimal_every: Option<u64>,
    /// This present (1-based) and every later one return `VK_ERROR_SURFACE_LOST_KHR`.
    pub surface_lost_at: Option<u64>,
    /// Creates and allocations that fail once the device has presented (a bit per [`Create`]).
    oom_after_present: u16,
    /// Creates and allocations that always fail (a bit per [`Create`]).
    oom_always: u16,
    /// Every `vkCreateQueryPool` fails.
    pub oom_query_pool: bool,
    /// Every `vkWaitForFences` sleeps this many milliseconds before it is forwarded.
    pub slow_fence_ms: Option<u64>,
    /// Every `vkAcquireNextImageKHR`/`vkAcquireNextImage2KHR` sleeps this many milliseconds
    /// before it is forwarded.
    pub slow_acquire_ms: Option<u64>,
    /// Every `vkCreateGraphicsPipelines` sleeps this many milliseconds before it is forwarded.
    pub slow_pipeline_ms: Option<u64>,
}

impl Config {
    /// Whether `c` fails once the device has presented.
    pub fn oom_after_present(&self, c: Create) -> bool {
        self.oom_after_present & c.bit() != 0
    }

    /// Whether `c` always fails.
    pub fn oom_always(&self, c: Create) -> bool {
        self.oom_always & c.bit() != 0
    }

    /// Whether anything is injected at all.
    pub fn is_empty(&self) -> bool {
        *self == Config::default()
    }

    /// Parses the variable's value: `key=value` or `key` items, comma-separated; blanks
    /// around items and empty items are ignored.
    pub fn parse(s: &str) -> Result<Config, String> {
        let mut c = Config::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            let count = || -> Result<u64, String> {
                let v = value.ok_or_else(|| format!("`{key}` needs a value (`{key}=N`)"))?;
                match v.parse::<u64>() {
                    Ok(n) if n >= 1 => Ok(n),
                    _ => Err(format!("`{key}={v}`: expected a whole number of at least 1")),
                }
            };
            match key {
                "lost_at_submit" => c.lost_at_submit = Some(count()?),
                "out_of_date_every" => c.out_of_date_every = Some(count()?),
                "suboptimal_every" => c.suboptimal_every = Some(count()?),
                "surface_lost_at" => c.surface_lost_at = Some(count()?),
                "slow_fence_ms" => c.slow_fence_ms = Some(count()?),
                "slow_acquire_ms" => c.slow_acquire_ms = Some(count()?),
                "slow_pipeline_ms" => c.slow_pipeline_ms = Some(count()?),
                "oom_after_present" => c.oom_after_present |= creates(key, value)?,
                "oom_always" => c.oom_always |= creates(key, value)?,
                "oom_query_pool" => {
                    if value.is_some() {
                        return Err("`oom_query_pool` takes no value".into());
                    }
                    c.oom_query_pool = true;
                }
                _ => return Err(format!("unknown item `{item}`")),
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_injects_nothing() {
        assert!(Config::parse("").unwrap().is_empty());
        assert!(Config::parse(" , ").unwrap().is_empty());
    }

    #[test]
    fn every_item() {
        let c = Config::parse(
            "lost_at_submit=20, out_of_date_every=7,suboptimal_every=5,surface_lost_at=3,oom_after_present=image+fence,oom_query_pool,oom_always=device+swapchain,slow_fence_ms=30,slow_acquire_ms=20,slow_pipeline_ms=40",
        )
        .unwrap();
        assert_eq!(
            (c.slow_fence_ms, c.slow_acquire_ms, c.slow_pipeline_ms),
            (Some(30), Some(20), Some(40))
        );
        assert_eq!(c.lost_at_submit, Some(20));
        assert_eq!(c.out_of_date_every, Some(7));
        assert_eq!(c.suboptimal_every, Some(5));
        assert_eq!(c.surface_lost_at, Some(3));
        assert!(c.oom_query_pool);
        let failing: Vec<Create> = Create::ALL.into_iter().filter(|&k| c.oom_after_present(k)).collect();
        assert_eq!(failing, [Create::Image, Create::Fence]);
        let always: Vec<Create> = Create::ALL.into_iter().filter(|&k| c.oom_always(k)).collect();
        assert_eq!(always, [Create::Device, Create::Swapchain]);
    }

    #[test]
    fn errors() {
        for bad in [
            "lost_at_submit",
            "lost_at_submit=0",
            "lost_at_submit=x",
            "out_of_date_every=-1",
            "oom_after_present",
            "oom_after_present=image+sampler",
            "oom_query_pool=1",
            "oom_always",
            "oom_always=surface",
            "slow_fence_ms",
            "slow_acquire_ms=0",
            "bogus",
        ] {
            assert!(Config::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_device_or_host_memory() {
        assert_eq!(Create::Memory.error(), vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert_eq!(Create::QueryPool.error(), vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert_eq!(Create::Fence.error(), vk::Result::ERROR_OUT_OF_HOST_MEMORY);
        assert_eq!(Create::CommandBuffers.error(), vk::Result::ERROR_OUT_OF_HOST_MEMORY);
    }
}
