package sampler

import (
	"strings"
	"testing"
)

func TestJobName(t *testing.T) {
	tests := []struct {
		job  *Job
		want string
	}{
		{nil, ""},
		{&Job{}, ""},
		{&Job{SlurmJobID: "4242", SlurmStep: "0"}, "slurm 4242.0"},
		{&Job{SlurmJobID: "4242", ContainerID: "ab"}, "slurm 4242"},
		{&Job{K8sPodUID: "1a2b3c4d-5e6f", K8sQOS: "burstable"}, "pod 1a2b3c4d"},
		{&Job{ContainerID: strings.Repeat("9b1e4a7c", 8), Runtime: "docker"}, "docker 9b1e4a7c9b1e"},
		{&Job{ContainerID: "abc"}, "container abc"},
	}
	for _, tt := range tests {
		if got := tt.job.Name(); got != tt.want {
			t.Errorf("%+v: Name() = %q, want %q", tt.job, got, tt.want)
		}
	}
}
