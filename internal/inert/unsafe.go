package inert

import "unsafe"

// unsafeString is b as a string without a copy: for b that is only read
// while the string is in use, or never written again.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
