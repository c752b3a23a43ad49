// common/scan_inputs.glsl — the SSM_SCAN operands s, x, dt, A, B, C and ids
// at bindings 0-6, as every scan kernel (forward and backward, every form)
// binds them; offsets and strides come from each kernel's push block.
layout(std430, set = 0, binding = 0) readonly buffer BufS { float s_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufDt { float dt_data[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufA { float A_data[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufB { float B_data[]; };
layout(std430, set = 0, binding = 5) readonly buffer BufC { float C_data[]; };
layout(std430, set = 0, binding = 6) readonly buffer BufIds { int ids_data[]; };
