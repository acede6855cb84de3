// SessionOptions and SessionStats: the public fusert/options.h, under the path the runtime includes.
#pragma once

#include "fusert/options.h"
#include "graph/base/tensor.h"
