package exporter

import "syscall"

// errAddrInUse is the error a listen on a taken port wraps.
var errAddrInUse error = syscall.EADDRINUSE
