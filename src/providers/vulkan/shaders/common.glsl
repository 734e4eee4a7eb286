// Shared by every shader: the workgroup width (specialisation constant 0,
// set by the pipeline) and the flat index of an invocation over a 2-D grid
// of workgroups (a dispatch wider than 65535 groups wraps into y).
layout(local_size_x_id = 0) in;

uint flat_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

uint flat_group() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#define kInfinity uintBitsToFloat(0x7f800000u)
