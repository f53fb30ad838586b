package sampler

import "time"

// A Backfiller is a Source that knows a device's history from before the
// sampler started (the fleet source reads it back from Prometheus). When a
// device first appears, the sampler seeds its history ring with the samples
// Backfill returns, oldest first; the ring keeps the newest that fit.
type Backfiller interface {
	Backfill(deviceID string) (times []time.Time, values []uint64)
}

// A LateBackfiller is a Backfiller whose history can come after its devices
// first appeared (the fleet asks Prometheus again when its first answer
// failed or came late). BackfillSeq changes each time history is read back;
// then the sampler asks for the history of the devices it already has too,
// and merges what comes before their own samples.
type LateBackfiller interface {
	Backfiller
	BackfillSeq() uint64
}

// An Omitter is a Source that knows of processes it does not list one by
// one (the fleet source: the processes a host's exporter leaves out over
// serve --max-process-series). After each ReadProcesses the sampler asks it
// how many device dev (an index into Info().Devices) has, and the memory
// they use (known false where the source does not say).
type Omitter interface {
	Omitted(dev int) (n int, bytes uint64, known bool)
}

// A ListTimer is a Source whose process lists can be older than the call
// that returned them (the NVML source reuses a list for up to a second
// while a device's used memory reads the same; a fleet host's processes are
// as old as its exporter's last answer). After each ReadProcesses the
// sampler asks it when device dev's list was read; zero means now.
type ListTimer interface {
	ListedAt(dev int) time.Time
}

// An AlertReporter is a Source that knows alerts in force from elsewhere
// (the fleet source: the vramtop_alert series each host exports). Each
// snapshot carries what ReportedAlerts returns (Snapshot.ReportedAlerts);
// the slice is not written after it is returned.
type AlertReporter interface {
	ReportedAlerts() []ReportedAlert
}

// A PartialLister is a Source that reads the processes of some devices
// only (the fleet source reads those of the host open on screen, not of
// every host). After each ReadProcesses the sampler asks it whether device
// dev's processes were left unread: such a device shows no processes, none
// of them exited and no unattributed memory, and says so
// (Device.ProcessesNotRead).
type PartialLister interface {
	NotListed(dev int) bool
}

// A Waker is a Source whose answers can come between the sampler's ticks
// (the fleet source, once it has read the processes of a host just
// opened). Run samples at once, off its schedule, when Wake's channel
// receives.
type Waker interface {
	Wake() <-chan struct{}
}
