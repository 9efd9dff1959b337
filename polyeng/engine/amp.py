"""Automatic mixed precision categories: how an op may treat lower-precision types."""
import enum


class Category(str, enum.Enum):
    ALLOW = "allow"     # may compute in a lower-precision type (matmul, linear, lstm)
    FOLLOW = "follow"   # computes in its input dtype (data movement, pooling, gelu...)
    DENY = "deny"       # always computes in f32 (softmax, layer_norm)

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__
