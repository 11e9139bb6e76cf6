"""Test harness: throwaway local stand-ins (real servers) for integration tests."""
