//go:build !linux

package lean

func releaseMappings(string) {}
