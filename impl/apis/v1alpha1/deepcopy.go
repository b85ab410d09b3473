package v1alpha1

// DeepCopyInto copies in into out. A time.Time is a value (its location is
// shared and immutable), so copying the pointed-to value is a deep copy.
func (in *PruneScheduleRequest) DeepCopyInto(out *PruneScheduleRequest) {
	*out = *in
	if in.NextRun != nil {
		t := *in.NextRun
		out.NextRun = &t
	}
}

// DeepCopy is a copy of in.
func (in *PruneScheduleRequest) DeepCopy() *PruneScheduleRequest {
	if in == nil {
		return nil
	}
	out := new(PruneScheduleRequest)
	in.DeepCopyInto(out)
	return out
}
