//go:build !linux

package initpages

// Release does nothing outside Linux: the mappings are found through
// /proc/self/maps.
func Release() {}
