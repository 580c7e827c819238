// A project header: the kernel finds it only through the build's -I include.
#pragma once

#ifndef TILE
#error "TILE comes from the build: compile with -DTILE=32"
#endif

#define SCALE 2.0f

__device__ inline float twice(float v) { return SCALE * v; }
