#include "detkit/utils/error.h"
