# Stage 1: a task from its source (mirror folder, HTTP mirror, Hugging Face) -> checked parquet + task card.


rule prepare_task:
    output:
        train="resources/tasks/{task}/train.parquet",
        test="resources/tasks/{task}/test.parquet",
        card="resources/tasks/{task}/card.json",
    params:
        task=task_params,
    log:
        "logs/prepare_task/{task}.log",
    conda:
        "../envs/geneb.yaml"
    script:
        "../scripts/prepare_task.py"
