//go:build cgo && !linux

package nvmlsource

// driverLists: elsewhere the lists go through go-nvml's wrappers.
func driverLists() listCall { return nil }
