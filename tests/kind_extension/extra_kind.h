// Forced into every file of the kind-extension build (tests/CMakeLists.txt): one kind more in the
// registry (schemas/kinds.h), and nothing else.
#pragma once
#define MEMLEDGER_EXTRA_KINDS(X) X(TestExtra, 11, "test_extra", Managed, Block)
