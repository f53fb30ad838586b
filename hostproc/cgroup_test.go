package hostproc

import (
	"strings"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

// TestCgroupJob reads the cgroup paths that Slurm, the kubelet (systemd and
// cgroupfs drivers) and the container runtimes create, in cgroup v1 and v2
// form.
func TestCgroupJob(t *testing.T) {
	const (
		id  = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
		pod = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	)
	podSystemd := strings.ReplaceAll(pod, "-", "_")
	tests := []struct {
		name, cgroup string
		want         *sampler.Job
	}{
		{"slurm v2 step", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n",
			&sampler.Job{SlurmJobID: "4242", SlurmStep: "0"}},
		{"slurm v1 batch step", "11:memory:/slurm/uid_1000/job_4242/step_batch\n10:cpuset:/slurm/uid_1000/job_4242/step_batch\n",
			&sampler.Job{SlurmJobID: "4242", SlurmStep: "batch"}},
		{"slurm v2 job without a step", "0::/system.slice/slurmstepd.scope/job_77\n",
			&sampler.Job{SlurmJobID: "77"}},
		{"slurm v1 several slurmds on a node", "4:devices:/slurm_node3/uid_1000/job_9/step_extern/task_0\n",
			&sampler.Job{SlurmJobID: "9", SlurmStep: "extern"}},
		{"pod burstable systemd containerd",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSystemd + ".slice/cri-containerd-" + id + ".scope\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "burstable", ContainerID: id, Runtime: "containerd"}},
		{"pod besteffort systemd cri-o",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podSystemd + ".slice/crio-" + id + ".scope\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "besteffort", ContainerID: id, Runtime: "crio"}},
		{"pod guaranteed systemd",
			"0::/kubepods.slice/kubepods-pod" + podSystemd + ".slice/cri-containerd-" + id + ".scope\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "guaranteed", ContainerID: id, Runtime: "containerd"}},
		{"pod burstable cgroupfs v1",
			"12:memory:/kubepods/burstable/pod" + pod + "/" + id + "\n1:name=systemd:/kubepods/burstable/pod" + pod + "/" + id + "\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "burstable", ContainerID: id}},
		{"pod besteffort cgroupfs v2", "0::/kubepods/besteffort/pod" + pod + "/" + id + "\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "besteffort", ContainerID: id}},
		{"pod guaranteed cgroupfs", "0::/kubepods/pod" + pod + "/" + id + "\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "guaranteed", ContainerID: id}},
		{"pod's own cgroup, no container yet", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSystemd + ".slice\n",
			&sampler.Job{K8sPodUID: pod, K8sQOS: "burstable"}},
		{"docker v2", "0::/system.slice/docker-" + id + ".scope\n", &sampler.Job{ContainerID: id, Runtime: "docker"}},
		{"docker v1", "12:memory:/docker/" + id + "\n", &sampler.Job{ContainerID: id, Runtime: "docker"}},
		{"podman rootless", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope/container\n",
			&sampler.Job{ContainerID: id, Runtime: "podman"}},
		{"podman v1", "3:cpu:/machine.slice/libpod-" + id + ".scope\n", &sampler.Job{ContainerID: id, Runtime: "podman"}},
		{"containerd (nerdctl) v2", "0::/system.slice/nerdctl-" + id + ".scope\n", &sampler.Job{ContainerID: id, Runtime: "containerd"}},
		{"containerd outside kubernetes", "0::/system.slice/cri-containerd-" + id + ".scope\n", &sampler.Job{ContainerID: id, Runtime: "containerd"}},
		{"cri-o v2", "0::/system.slice/crio-" + id + ".scope\n", &sampler.Job{ContainerID: id, Runtime: "crio"}},
		{"a container in a slurm job", "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0/docker-" + id + ".scope\n",
			&sampler.Job{SlurmJobID: "5", SlurmStep: "0", ContainerID: id, Runtime: "docker"}},
		{"podman's conmon is no container", "0::/machine.slice/libpod-conmon-" + id + ".scope\n", nil},
		{"login session", "0::/user.slice/user-1000.slice/session-3.scope\n", nil},
		{"a job_ outside slurm", "0::/system.slice/job_12.service\n", nil},
		{"short hex is no id", "0::/system.slice/docker-3f4e5d6c7b8a.scope\n", nil},
		{"upper-case hex is no id", "0::/docker/" + strings.ToUpper(id) + "\n", nil},
		{"root", "0::/\n", nil},
		{"no separators", "garbage\n", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		got := cgroupJob([]byte(tt.cgroup))
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestContainerID(t *testing.T) {
	const id = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
	tests := []struct {
		name, cgroup, want string
	}{
		{"docker v1", "12:memory:/docker/" + id + "\n", "3f4e5d6c7b8a"},
		{"docker v2", "0::/system.slice/docker-" + id + ".scope\n", "3f4e5d6c7b8a"},
		{"containerd v2", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-" + id + ".scope\n", "3f4e5d6c7b8a"},
		{"cri-o v2", "0::/kubepods.slice/kubepods-pod1.slice/crio-" + id + ".scope\n", "3f4e5d6c7b8a"},
		{"kubepods v1", "3:cpuset:/kubepods/besteffort/pod1234/" + id + "\n", "3f4e5d6c7b8a"},
		{"podman", "0::/machine.slice/libpod-" + id + ".scope\n", "3f4e5d6c7b8a"},
		{"slurm, no container", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", ""},
		{"host session", "0::/user.slice/user-1000.slice/session-2.scope\n", ""},
		{"root", "0::/\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := containerID([]byte(tt.cgroup)); got != tt.want {
			t.Errorf("%s: containerID(%q) = %q, want %q", tt.name, tt.cgroup, got, tt.want)
		}
	}
}

// containerID returns the 12-character short id of the container named in a
// /proc/PID/cgroup file; empty when the process is in none.
func containerID(b []byte) string {
	return shortContainerID(cgroupJob(b))
}
