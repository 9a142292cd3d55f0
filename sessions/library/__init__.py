"""The incident library: virtual-time schedules shipped with Lull."""
