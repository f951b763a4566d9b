"""A supervised pass over every weight of a model with TRL's SFTTrainer: the one training loop of the warm starts
(``warmstart`` for worked thinking examples, ``arithmetic`` for the answer format)."""

from __future__ import annotations

from pathlib import Path


def fine_tune(model, tokenizer, rendered: list[dict], scratch: Path, *, steps: int, batch_size: int, lr: float,
              seed: int, logging_steps: int, callbacks=()):
    """Every weight of ``model`` trained on ``rendered`` (prompt, completion) by TRL's SFTTrainer, the loss on the
    completion only (the eos token added): a linear warm-up over the first 5% of ``steps``, then a linear decay,
    gradients clipped at 1. Returns (the trainer, its train() result); ``scratch`` is removed after."""
    import shutil

    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    # every example whole: long thinking must not be cut (its end, </think> and the answer, is what is learned)
    longest = max(len(tokenizer(row["prompt"] + row["completion"], add_special_tokens=False).input_ids)
                  for row in rendered) + 1
    args = SFTConfig(
        output_dir=str(scratch), max_steps=steps, per_device_train_batch_size=batch_size,
        learning_rate=lr, lr_scheduler_type="linear", warmup_steps=max(1, steps // 20), weight_decay=0.0,
        logging_steps=logging_steps, save_strategy="no", report_to=[], seed=seed, bf16=False, fp16=False,
        max_length=longest, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rendered), processing_class=tokenizer)
    trainer.remove_callback(PrinterCallback)  # stdout is for the result; the loss goes to stderr
    for callback in callbacks:
        trainer.add_callback(callback)
    try:
        return trainer, trainer.train()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
