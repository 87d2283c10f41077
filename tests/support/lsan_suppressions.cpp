// Linked into every test program that opens Vulkan. Mesa's lavapipe leaks a few bytes it
// allocates while the instance lives (reported at exit; nothing of ours is on the stack), so
// LeakSanitizer ignores allocations made inside the driver and keeps checking everything else.
extern "C" const char* __lsan_default_suppressions() { return "leak:libvulkan_lvp.so\n"; }
