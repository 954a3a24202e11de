"""Coverage workload: GPT-2 (random weights, from its config) generating with PyTorch eager,
with torch.cuda.synchronize() after each of 8 generations."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab_size=50257)
model = GPT2LMHeadModel(cfg).cuda().eval()
ids = torch.randint(0, cfg.vocab_size, (1, 16), device="cuda")
with torch.no_grad():
    for _ in range(8):
        out = model.generate(ids, max_new_tokens=16, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
print("torch_eager: generated", tuple(out.shape))
