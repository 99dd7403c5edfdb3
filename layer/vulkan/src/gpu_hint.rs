//! Which GPU a device renders on, for the counter sources that must pick one (NVML, amdgpu).

use crate::dispatch::instance::Instance;
use ash::vk;
use framescope_collectors::GpuHint;

/// The device's PCI address (`VK_EXT_pci_bus_info`) when it can be asked without touching
/// what the app enabled: the query needs `vkGetPhysicalDeviceProperties2`, a core command of
/// a 1.1 instance (on a 1.0 instance the KHR alias would need the app's extension). Else the
/// device name, which NVML and sysfs also know.
pub fn gpu_hint(inst: &Instance, phys: vk::PhysicalDevice, props: &vk::PhysicalDeviceProperties) -> GpuHint {
    let name = props
        .device_name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let by_name = GpuHint::Name(name);
    if inst.api_version < vk::API_VERSION_1_1 || props.api_version < vk::API_VERSION_1_1 {
        return by_name;
    }
    let exts = inst.device_extensions(phys);
    let has_pci = exts
        .iter()
        .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::pci_bus_info::NAME));
    if !has_pci {
        return by_name;
    }
    let mut pci = vk::PhysicalDevicePCIBusInfoPropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut pci);
    // A 1.1 instance and device, and the chained struct's extension is supported.
    inst.physical_device_properties2(phys, &mut p2);
    GpuHint::Pci {
        domain: pci.pci_domain,
        bus: pci.pci_bus,
        device: pci.pci_device,
        function: pci.pci_function,
    }
}
